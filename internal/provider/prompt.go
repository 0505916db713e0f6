package provider

import (
	"strings"
)

// BlankAnswer is what vision models are asked to answer for a page without
// text. Chat models cannot reliably answer with nothing at all, and a
// fixed token is easy to tell from a transcription; CleanTranscription
// turns it into the empty text a blank page must give.
const BlankAnswer = "[BLANK]"

// SystemPrompt is the instruction that makes a vision chat model a
// transcriber: faithful text in reading order in the requested format
// ("html" or else markdown), nothing added, nothing left out, no
// commentary, and BlankAnswer for a page without text.
func SystemPrompt(format string) string {
	var b strings.Builder
	b.WriteString(`You are a precise OCR engine. Transcribe all text visible in the document exactly as written, in natural reading order (for multi-column layouts, finish one column before starting the next).

Rules:
- Reproduce the text faithfully: same words, spelling, numbers, punctuation, capitalisation and language. Do not translate, correct, summarise, paraphrase or complete anything.
- Never invent text. If a word cannot be read, write [illegible] in its place.
- Include headers, footers, captions, footnotes, form labels with their filled-in values, and text inside tables and figures.
- Do not describe images, logos, signatures or layout; transcribe only the text they contain.
- Output only the transcription: no preamble, no commentary, no explanations, no code fences.
`)
	if format == "html" {
		b.WriteString(`- Format the transcription as an HTML fragment: <h1>–<h6> for headings, <p> for paragraphs, <ul>/<ol> with <li> for lists, <table> with <tr>, <th> and <td> for tables (use rowspan/colspan where cells are merged), <br> for line breaks that matter. No <html>, <head> or <body> element, no attributes other than rowspan and colspan, no CSS, no scripts.
`)
	} else {
		b.WriteString(`- Format the transcription as Markdown: # headings for headings, blank lines between paragraphs, - or 1. for lists, Markdown tables (with a header row) for tables, **bold** only where the document emphasises text.
`)
	}
	b.WriteString(`- If the document contains no text at all (a blank page, or only pictures without text), answer exactly ` + BlankAnswer + ` and nothing else.`)
	return b.String()
}

// UserPrompt is the request that accompanies the document itself.
func UserPrompt(doc Document) string {
	if doc.MIME == "application/pdf" {
		return "Transcribe the text of every page of this PDF, page by page in order, following the rules."
	}
	return "Transcribe the text of this page image, following the rules."
}

// AnswerFormat returns the format a transcription was asked in: "html" when the
// document asks for it, else "markdown".
func AnswerFormat(doc Document) string {
	if doc.Format == "html" {
		return "html"
	}
	return "markdown"
}

// CleanTranscription turns a vision model's answer into the text of a
// Recognition: surrounding whitespace and a code fence wrapped around the
// whole answer (which models add despite being asked not to) are removed,
// and the blank-page answer becomes "".
func CleanTranscription(answer string) string {
	s, _ := clean(answer)
	return s
}

// Transcription is CleanTranscription for an adapter reading a vision
// model's answer given with status: an answer with no text at all is not
// a blank page (the prompt asks for BlankAnswer there) but a failed call,
// EmptyAnswer, which is retried instead of recording the page as blank.
func Transcription(answer string, status int) (string, *Error) {
	s, blank := clean(answer)
	if s == "" && !blank {
		return "", EmptyAnswer(status)
	}
	return s, nil
}

// clean is CleanTranscription, also reporting whether the answer was the
// blank-page answer.
func clean(answer string) (text string, blank bool) {
	s := strings.TrimSpace(answer)
	if strings.HasPrefix(s, "```") && strings.HasSuffix(s, "```") && len(s) >= 6 {
		inner := strings.TrimSuffix(s[3:], "```")
		// The opening fence may name a language: ```markdown, ```html.
		if nl := strings.IndexByte(inner, '\n'); nl >= 0 && !strings.ContainsAny(strings.TrimSpace(inner[:nl]), " <#|") {
			inner = inner[nl+1:]
		}
		s = strings.TrimSpace(inner)
	}
	if isBlankAnswer(s) {
		return "", true
	}
	return s, false
}

func isBlankAnswer(s string) bool {
	t := strings.ToUpper(strings.Trim(s, " \t\r\n.`*_\"'"))
	return t == BlankAnswer || t == "BLANK" || t == "<BLANK>" || t == "(BLANK)"
}
