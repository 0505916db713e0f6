package providertest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Unless answers like refusal (a vendor's 400, JSON body) when rule finds
// the request body breaks a rule of the vendor's, else like next: a fake
// vendor that refuses what the real one refuses.
func Unless(rule func(body []byte) string, refusal string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if rule(body) != "" {
			Reply(http.StatusBadRequest, refusal)(w, r)
			return
		}
		next(w, r)
	}
}

// ItemArray returns the JSON pointer of the first schema in a request body
// whose items is an array (an older draft's tuple), "" when none is. Vendors
// that read only 2020-12 refuse it ("'items' must be a schema (object or
// boolean), not an array. For tuple validation, use 'prefixItems'
// instead.").
func ItemArray(body []byte) string {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	return itemArray(v, "")
}

func itemArray(v any, at string) string {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["items"].([]any); ok {
			return at + "/items"
		}
		for k, e := range v {
			if k == "enum" || k == "const" {
				continue
			}
			if p := itemArray(e, at+"/"+strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")); p != "" {
				return p
			}
		}
	case []any:
		for i, e := range v {
			if p := itemArray(e, at+"/"+strconv.Itoa(i)); p != "" {
				return p
			}
		}
	}
	return ""
}
