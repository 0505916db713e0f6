package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// This file answers a request for a known path with a method the path does
// not serve: 405 with the Allow header RFC 9110 requires, in the error shape
// of that path. Neither router does it alone: net/http's ServeMux falls
// through to the gateway's /v1/ catch-all, and grpc-gateway matched
// GET /v1/jobs/upload and GET /v1/jobs/{id}:cancel as GET /v1/jobs/{id}
// (404 "job not found"). So every path template of the service, from the
// ServeMux patterns and the google.api.http bindings alike, is matched here
// first, the most specific one winning as in ServeMux (upload over {id}).

// methodTable holds every path template of the service with its methods.
type methodTable struct {
	paths []*pathMethods
}

// pathMethods is one path template and what it serves.
type pathMethods struct {
	template string // the route label too: "/v1/jobs/{id}:cancel"
	segs     []pathSegment
	methods  []string
	// answer writes the path's error shape: the upload path's has no details.
	answer func(http.ResponseWriter, *http.Request, error)
}

// pathSegment is one segment of a template: a literal, or a variable that
// takes any non-empty segment, optionally ending in a custom verb
// ("{id}:cancel").
type pathSegment struct {
	literal string
	wild    bool
	verb    string
}

// rank orders segments by specificity: a literal over a variable with a
// verb over a bare variable.
func (p pathSegment) rank() int {
	switch {
	case !p.wild:
		return 2
	case p.verb != "":
		return 1
	}
	return 0
}

func (p pathSegment) matches(seg string) bool {
	switch {
	case !p.wild:
		return seg == p.literal
	case p.verb != "":
		rest, ok := strings.CutSuffix(seg, ":"+p.verb)
		return ok && rest != ""
	}
	return seg != ""
}

// parseTemplate reads a path template in the form both routers use here:
// literal segments and single-segment variables ({id} or {id=*}), the last
// one optionally followed by :verb.
func parseTemplate(template string) ([]pathSegment, error) {
	if !strings.HasPrefix(template, "/") {
		return nil, fmt.Errorf("path template %q does not start with /", template)
	}
	var segs []pathSegment
	for _, s := range strings.Split(template[1:], "/") {
		if !strings.HasPrefix(s, "{") {
			if strings.ContainsAny(s, "{}*") || s == "" {
				return nil, fmt.Errorf("path template %q: segment %q is not supported", template, s)
			}
			segs = append(segs, pathSegment{literal: s})
			continue
		}
		name, rest, ok := strings.Cut(s[1:], "}")
		if v, pattern, hasPattern := strings.Cut(name, "="); !ok || v == "" || (hasPattern && pattern != "*") {
			return nil, fmt.Errorf("path template %q: segment %q is not supported", template, s)
		}
		seg := pathSegment{wild: true}
		if rest != "" {
			verb, isVerb := strings.CutPrefix(rest, ":")
			if !isVerb || verb == "" {
				return nil, fmt.Errorf("path template %q: segment %q is not supported", template, s)
			}
			seg.verb = verb
		}
		segs = append(segs, seg)
	}
	return segs, nil
}

// add records that template serves method (GET on a ServeMux pattern also
// serves HEAD; pass it explicitly). answer is the path's error writer.
func (t *methodTable) add(method, template string, answer func(http.ResponseWriter, *http.Request, error)) error {
	for _, p := range t.paths {
		if p.template == template {
			if !slices.Contains(p.methods, method) {
				p.methods = append(p.methods, method)
				sortMethods(p.methods)
			}
			return nil
		}
	}
	segs, err := parseTemplate(template)
	if err != nil {
		return err
	}
	t.paths = append(t.paths, &pathMethods{template: template, segs: segs, methods: []string{method}, answer: answer})
	return nil
}

// match returns the most specific template matching path, or nil.
func (t *methodTable) match(path string) *pathMethods {
	if !strings.HasPrefix(path, "/") {
		return nil
	}
	segs := strings.Split(path[1:], "/")
	var best *pathMethods
	for _, p := range t.paths {
		if len(p.segs) != len(segs) {
			continue
		}
		ok := true
		for i, s := range p.segs {
			if !s.matches(segs[i]) {
				ok = false
				break
			}
		}
		if ok && (best == nil || moreSpecific(p, best)) {
			best = p
		}
	}
	return best
}

func moreSpecific(a, b *pathMethods) bool {
	for i := range a.segs {
		if ra, rb := a.segs[i].rank(), b.segs[i].rank(); ra != rb {
			return ra > rb
		}
	}
	return false
}

// methodOrder is the order of methods in an Allow header.
var methodOrder = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
	http.MethodPatch, http.MethodDelete, http.MethodOptions,
}

func sortMethods(m []string) {
	slices.SortFunc(m, func(a, b string) int {
		ia, ib := slices.Index(methodOrder, a), slices.Index(methodOrder, b)
		if ia < 0 {
			ia = len(methodOrder)
		}
		if ib < 0 {
			ib = len(methodOrder)
		}
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a, b)
	})
}

// allow is the Allow header of p.
func (p *pathMethods) allow() string { return strings.Join(p.methods, ", ") }

// errMethodNotAllowed is the 405 answer for r.
func errMethodNotAllowed(r *http.Request) error {
	return &runtime.HTTPStatusError{
		HTTPStatus: http.StatusMethodNotAllowed,
		Err:        status.Errorf(codes.Unimplemented, "method %s is not allowed on %s", r.Method, r.URL.Path),
	}
}

// check answers 405 for a known path asked with a method it does not
// serve, and passes every other request to next.
func (t *methodTable) check(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := t.match(r.URL.Path)
		if p == nil || slices.Contains(p.methods, r.Method) {
			next.ServeHTTP(w, r)
			return
		}
		setRoute(r.Context(), p.template)
		w.Header().Set("Allow", p.allow())
		p.answer(w, r, errMethodNotAllowed(r))
	})
}
