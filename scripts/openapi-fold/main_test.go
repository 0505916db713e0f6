package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFold(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			name: "a document without repeated keys comes out as it went in",
			in: `# Generated with protoc-gen-openapi
# https://github.com/google/gnostic/tree/master/cmd/protoc-gen-openapi

openapi: 3.0.3
paths:
    /v1/jobs/{id}:cancel:
        post:
            description: |-
                Two lines
                 of comment.
            responses:
                "200":
                    description: 'It''s quoted: here.'
                    content: {}
`,
			want: `# Generated with protoc-gen-openapi
# https://github.com/google/gnostic/tree/master/cmd/protoc-gen-openapi

openapi: 3.0.3
paths:
    /v1/jobs/{id}:cancel:
        post:
            description: |-
                Two lines
                 of comment.
            responses:
                "200":
                    description: 'It''s quoted: here.'
                    content: {}
`,
		},
		{
			name: "an annotation's response folds into the derived one, which keeps its place and its description",
			in: `responses:
    "200":
        description: OK
        content: {}
    default:
        description: Default error response
    "401":
        $ref: '#/components/responses/Unauthenticated'
    "200":
        description: ""
        headers:
            Docjobs-Warning:
                $ref: '#/components/headers/DocjobsWarning'
        content:
            application/json:
                schema:
                    $ref: '#/components/schemas/Empty'
`,
			want: `responses:
    "200":
        description: OK
        content:
            application/json:
                schema:
                    $ref: '#/components/schemas/Empty'
        headers:
            Docjobs-Warning:
                $ref: '#/components/headers/DocjobsWarning'
    default:
        description: Default error response
    "401":
        $ref: '#/components/responses/Unauthenticated'
`,
		},
		{
			name: "a repeated key deep inside merges key by key; a scalar given again takes the later value",
			in: `a:
    b:
        c: 1
        d: x
a:
    b:
        d: "y"
        e: [1, 2]
`,
			want: `a:
    b:
        c: 1
        d: "y"
        e: [1, 2]
`,
		},
		{
			name: "a mapping given again over a scalar replaces it",
			in: `a: 1
a:
    b: 2
`,
			want: `a:
    b: 2
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fold([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// The committed document is what `make generate` wrote: folding it again
// changes no byte.
func TestTheCommittedDocumentIsFolded(t *testing.T) {
	path := filepath.Join("..", "..", "gen", "openapi", "openapi.yaml")
	in, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := fold(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(in) {
		t.Errorf("folding %s changes it: run make generate", path)
	}
}

func TestFoldRefusesWhatIsNotYAML(t *testing.T) {
	if _, err := fold([]byte("a: [1, 2\n")); err == nil {
		t.Error("no error for an unclosed flow sequence")
	}
}
