package api

// maxIDBytes bounds an id the service may have made: a UUID's text is 36.
const maxIDBytes = 64

// PossibleID reports whether id could name a job or file of this service:
// 1 to 64 bytes of ASCII letters, digits and - . _ ~ (the characters a URL
// path segment carries unescaped). Every id the service makes is the text
// of a UUIDv7 (Deps.NewID, and the worker's copies, made by the same
// function). Anything else, a NUL, an invalid UTF-8 byte, a slash,
// cannot exist, so it is answered not found without asking the store,
// where PostgreSQL would refuse such text as an error of its own.
func PossibleID(id string) bool {
	if id == "" || len(id) > maxIDBytes {
		return false
	}
	for i := range len(id) {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '.', c == '_', c == '~':
		default:
			return false
		}
	}
	return true
}
