package convert

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// formattingRun is k distinct start tags of a formatting element: the
// parser keeps every one of them to re-open (identical ones, only three).
func formattingRun(tag string, k int) string {
	var sb strings.Builder
	for i := range k {
		fmt.Fprintf(&sb, "<%s id=%d>", tag, i)
	}
	return sb.String()
}

func TestHTMLNodeLimit(t *testing.T) {
	const limit = 1000
	tests := []struct {
		name    string
		doc     string
		wantErr bool
	}{
		{name: "a document within the limit converts", doc: strings.Repeat("<p>text</p>", 100)},
		{name: "empty elements beyond the limit", doc: strings.Repeat("<p>", 1500), wantErr: true},
		{name: "table cells count the rows and bodies the parser adds", doc: "<table>" + strings.Repeat("<td>", 400), wantErr: true},
		{
			// 150 tokens, but every <li> closes the 20 <b>s and the text
			// after it re-opens them: 20 clones a list item.
			name:    "formatting elements re-opened by every list item",
			doc:     "<ul><li>" + formattingRun("b", 20) + strings.Repeat("<li>x", 60),
			wantErr: true,
		},
		{
			// Behind a table the parser ignores the </b>s: the <b>s stay
			// to be re-opened.
			name:    "end tags the parser ignores close nothing",
			doc:     "<ul><li>" + formattingRun("b", 20) + "<table>" + strings.Repeat("</b>", 20) + "</table>" + strings.Repeat("<li>x", 60),
			wantErr: true,
		},
		{
			// In SVG a <title> is an element, not raw text: the tags after
			// it are counted.
			name:    "tags after an SVG title are counted",
			doc:     "<svg><title>" + strings.Repeat("<p>", 1500),
			wantErr: true,
		},
		{name: "closed formatting elements are not re-opened", doc: "<ul>" + strings.Repeat("<li><b id=1>x</b> <i id=2>y</i>", 60) + "</ul>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(Config{})
			c.htmlNodeLimit = limit
			out, err := c.Convert(context.Background(), Input{Name: "a.html", Data: []byte(tt.doc)})
			if tt.wantErr {
				want := fmt.Sprintf("the HTML document parses into more than %d elements and text runs, over the limit", limit)
				if err == nil || err.Error() != want {
					t.Fatalf("Convert = %v, want %q", err, want)
				}
				return
			}
			if err != nil || out.Content == "" {
				t.Fatalf("Convert = %q, %v; want content", out.Content, err)
			}
		})
	}
}

// TestHTMLNodesBoundTheParsersTree checks that htmlNodes never counts
// fewer nodes than html.Parse builds, on the markup known to make it build
// more nodes than it reads tags and on random misnested markup.
func TestHTMLNodesBoundTheParsersTree(t *testing.T) {
	b := formattingRun("b", 100)
	docs := []string{
		"<ul><li>" + b + strings.Repeat("<li>x", 300),
		"<dl><dd>" + formattingRun("i", 100) + strings.Repeat("<dd>x", 300),
		"<p>" + b + "</p>" + strings.Repeat("x<p></p>", 300),
		"<table><tr><td>" + b + strings.Repeat("</td><td>x", 300),
		`<p><a href="x">` + strings.Repeat("<p>a", 300),
		formattingRun("b", 100) + formattingRun("i", 100) + strings.Repeat("x</b>", 100),
		strings.Repeat("<b>"+strings.Repeat("<div>", 10)+"x</b>", 100),
		strings.Repeat("<div>", 10) + strings.Repeat("<b>x<p>y</b>", 300),
		"<ul><li>" + formattingRun("b", 50) + "<marquee>" + formattingRun("i", 50) + "</marquee>" + strings.Repeat("<li>x", 300),
	}
	for _, boundary := range []string{"table", "select", "template", "object", "svg", "math><mi", "svg><foreignObject", "button"} {
		closing := "</" + strings.ReplaceAll(boundary, "><", "></") + ">"
		docs = append(docs, "<ul><li>"+b+"<"+boundary+">"+strings.Repeat("</b>", 100)+closing+strings.Repeat("<li>x", 300))
	}
	tokens := strings.Split("<b>|<b id=1>|<b id=2>|<i id=3>|</b>|<i>|</i>|<a>|<a href=x>|</a>|<nobr>|</nobr>|<font size=1>|</font>|"+
		"<em>|</em>|<code>|</code>|<p>|</p>|<div>|</div>|<li>|<ul>|</ul>|<dd>|<h1>|</h1>|<pre>|</pre>|<br>|</br>|x|y|"+
		"<table>|</table>|<td>|</td>|<tr>|<caption>|</caption>|<select>|</select>|<template>|</template>|"+
		"<object>|</object>|<marquee>|</marquee>|<button>|</button>|<svg>|</svg>|<title>|<desc>|</desc>|"+
		"<foreignObject>|</foreignObject>|<math>|</math>|<mi>|</mi>", "|")
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		var sb strings.Builder
		for range 5 + r.IntN(200) {
			sb.WriteString(tokens[r.IntN(len(tokens))])
		}
		docs = append(docs, sb.String())
	}
	for _, doc := range docs {
		tree, err := html.Parse(strings.NewReader(doc))
		if err != nil {
			continue // nested beyond the parser's limit: no tree
		}
		// The count leaves out the document node and the <html>, <head>
		// and <body> every document gets.
		built, counted := countNodes(tree), htmlNodes(doc, 1<<30)+4
		if built > counted {
			t.Errorf("html.Parse built %d nodes, htmlNodes counted %d, for %.200q", built, counted, doc)
		}
	}
}

func countNodes(n *html.Node) int {
	count := 1
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		count += countNodes(c)
	}
	return count
}
