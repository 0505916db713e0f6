package pdf

import "testing"

func TestProviderMarkdownToHTML(t *testing.T) {
	tests := []struct {
		name string
		md   string
		want string
	}{
		{"a single tilde is a subscript, not a deletion", "We find H~2~O", "<p>We find H~2~O</p>\n"},
		{"a single tilde is about, not a deletion", "about ~5 km to ~10 km", "<p>about ~5 km to ~10 km</p>\n"},
		{"double tildes strike through", "~~gone~~ stays", "<p><del>gone</del> stays</p>\n"},
		{"triple tildes are text", "a ~~~x~~~ y", "<p>a ~~~x~~~ y</p>\n"},
		{"task list boxes keep their state", "- [x] Married\n- [ ] Divorced",
			"<ul>\n<li><input checked=\"\" disabled=\"\" type=\"checkbox\"> Married</li>\n<li><input disabled=\"\" type=\"checkbox\"> Divorced</li>\n</ul>\n"},
		{"a line break in a paragraph is the page's line", "ACME GmbH\nMain Street 1\n10115 Berlin\n\nInvoice",
			"<p>ACME GmbH<br>\nMain Street 1<br>\n10115 Berlin</p>\n<p>Invoice</p>\n"},
		{"a list item's lines stay apart", "- Total\n  EUR 12.00", "<ul>\n<li>Total<br>\nEUR 12.00</li>\n</ul>\n"},
		{"tables and autolinks still read", "| a | b |\n|---|---|\n| 1 | 2 |\n\nsee https://e.com",
			"<table>\n<thead>\n<tr>\n<th>a</th>\n<th>b</th>\n</tr>\n</thead>\n<tbody>\n<tr>\n<td>1</td>\n<td>2</td>\n</tr>\n</tbody>\n</table>\n<p>see <a href=\"https://e.com\">https://e.com</a></p>\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := markdownToHTML(tt.md)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("markdownToHTML(%q) =\n%q\nwant\n%q", tt.md, got, tt.want)
			}
		})
	}
}
