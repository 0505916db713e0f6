package provider

import "context"

// RedactOCR returns ocr with the secrets removed from everything it
// answers: the text and pages (which rows store and return, and which the
// model stage sends to a second vendor) by Elide, the debug fields by
// Redact. An adapter redacts its own key; only the caller knows the other
// secrets of the job (the model key, the webhook secret) that a vendor
// could have been given or echo.
func RedactOCR(ocr OCR, secrets Secrets) OCR {
	if secrets.Empty() {
		return ocr
	}
	return redactingOCR{next: ocr, secrets: secrets}
}

type redactingOCR struct {
	next    OCR
	secrets Secrets
}

func (r redactingOCR) Recognize(ctx context.Context, doc Document) (Recognition, error) {
	rec, err := r.next.Recognize(ctx, doc)
	rec.Text = r.secrets.Elide(rec.Text)
	for i, p := range rec.Pages {
		rec.Pages[i] = r.secrets.Elide(p)
	}
	rec.Request, rec.RawData = r.secrets.Redact(rec.Request), r.secrets.Redact(rec.RawData)
	return rec, err
}

// Accepts passes the question on: redaction changes answers, not types.
func (r redactingOCR) Accepts(ctx context.Context, mime string) (ok, known bool) {
	return Accepts(ctx, r.next, mime)
}

// RedactChat returns chat with the secrets removed from what it sends
// (the text to read may be an OCR vendor's answer quoting the OCR key,
// which the model vendor must not be given) and from what it answers: the
// content by Elide, the debug fields by Redact.
func RedactChat(chat Chat, secrets Secrets) Chat {
	if secrets.Empty() {
		return chat
	}
	return redactingChat{next: chat, secrets: secrets}
}

type redactingChat struct {
	next    Chat
	secrets Secrets
}

func (r redactingChat) Complete(ctx context.Context, req ChatRequest) (ChatAnswer, error) {
	req.System, req.User = r.secrets.Elide(req.System), r.secrets.Elide(req.User)
	a, err := r.next.Complete(ctx, req)
	a.Content = r.secrets.Elide(a.Content)
	a.Request, a.RawData = r.secrets.Redact(a.Request), r.secrets.Redact(a.RawData)
	return a, err
}
