package pdf

import "os"

// source is the PDF as poppler's processes open it. The bytes are a user's
// document: a copy of them must not outlive the process that made it, as a
// named temporary file does when the process is killed (kill -9, OOM,
// a forced stop) before its deferred remove runs. Nothing at start or in any
// sweep would find such a file, and it outlived the job's DELETE.
type source struct {
	// arg is the path poppler is given.
	arg string
	// file, when set, is handed to each process as its descriptor 3
	// (exec.Cmd.ExtraFiles), which arg names.
	file *os.File
	// name is the file to remove at close, "" when there is none.
	name string
}

// extraFiles are the descriptors a poppler process inherits.
func (s *source) extraFiles() []*os.File {
	if s == nil || s.file == nil {
		return nil
	}
	return []*os.File{s.file}
}

func (s *source) close() {
	if s.file != nil {
		s.file.Close()
	}
	if s.name != "" {
		os.Remove(s.name)
	}
}
