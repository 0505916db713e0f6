package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/api/annotations"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
)

// jsonReadTimeout bounds reading a REST call, set per request because a
// server-wide ReadTimeout would also cut long uploads. Its answer is under
// the idle write deadline of every answer (writedeadline.go).
const jsonReadTimeout = 30 * time.Second

// WarningHeader names the request fields the server ignored.
const WarningHeader = "Docjobs-Warning"

// restRoute is what the REST layer knows about one HTTP binding of an RPC.
type restRoute struct {
	request protoreflect.MessageType
	body    bool // the binding reads a JSON body
}

// newGateway builds the in-process grpc-gateway mux in front of svc. The
// JSON marshaler is protojson with camelCase names, no zero values, and
// unknown fields discarded (bindRequest reports what was discarded).
func (s *Server) newGateway(svc docjobsv1.JobServiceServer) (*runtime.ServeMux, error) {
	routes, err := restRoutes(docjobsv1.File_docjobs_v1_docjobs_proto.Services().ByName("JobService"))
	if err != nil {
		return nil, err
	}
	s.routes = routes
	s.json = resultMarshaler{&runtime.JSONPb{
		MarshalOptions:   protojson.MarshalOptions{UseProtoNames: false, EmitUnpopulated: false},
		UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: true},
	}}
	mux := runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, s.json),
		runtime.WithErrorHandler(s.gatewayError),
		runtime.WithRoutingErrorHandler(s.routingError),
		// POST x-www-form-urlencoded falling back to a GET route, and
		// X-HTTP-Method-Override, are surface we do not need.
		runtime.WithDisablePathLengthFallback(),
		runtime.WithMiddlewares(s.bindRequest),
	)
	// The context is only stored by the generated code for client-mode
	// registration; handler-server mode does not use it.
	if err := docjobsv1.RegisterJobServiceHandlerServer(context.Background(), mux, svc); err != nil {
		return nil, fmt.Errorf("register REST handlers: %w", err)
	}
	// Registered after the generated handler of the same route, so tried
	// before it (resultstream.go).
	if s.deps.Results != nil {
		if err := mux.HandlePath(http.MethodGet, resultRoute, s.streamResult); err != nil {
			return nil, fmt.Errorf("register the result stream: %w", err)
		}
	}
	return mux, nil
}

// restRoutes reads the google.api.http bindings of sd into "METHOD /path/{var}" keys.
func restRoutes(sd protoreflect.ServiceDescriptor) (map[string]restRoute, error) {
	if sd == nil {
		return nil, errors.New("JobService descriptor not found")
	}
	routes := map[string]restRoute{}
	methods := sd.Methods()
	for i := range methods.Len() {
		m := methods.Get(i)
		mt, err := protoregistry.GlobalTypes.FindMessageByName(m.Input().FullName())
		if err != nil {
			return nil, fmt.Errorf("request type of %s: %w", m.FullName(), err)
		}
		rule, _ := proto.GetExtension(m.Options(), annotations.E_Http).(*annotations.HttpRule)
		if rule == nil {
			continue
		}
		for _, b := range append([]*annotations.HttpRule{rule}, rule.GetAdditionalBindings()...) {
			verb, path := httpBinding(b)
			if path == "" {
				continue
			}
			routes[verb+" "+path] = restRoute{request: mt, body: b.GetBody() != ""}
		}
	}
	return routes, nil
}

func httpBinding(r *annotations.HttpRule) (verb, path string) {
	switch p := r.GetPattern().(type) {
	case *annotations.HttpRule_Get:
		return http.MethodGet, p.Get
	case *annotations.HttpRule_Post:
		return http.MethodPost, p.Post
	case *annotations.HttpRule_Put:
		return http.MethodPut, p.Put
	case *annotations.HttpRule_Delete:
		return http.MethodDelete, p.Delete
	case *annotations.HttpRule_Patch:
		return http.MethodPatch, p.Patch
	case *annotations.HttpRule_Custom:
		return p.Custom.GetKind(), p.Custom.GetPath()
	}
	return "", ""
}

// routeLabel turns a matched gateway pattern back into its template text:
// a Pattern prints "{id}" as "{id=*}"; captures with their own template
// ("{name=files/*}") keep it, as in the proto.
func routeLabel(ctx context.Context) string {
	pat, ok := runtime.HTTPPattern(ctx)
	if !ok {
		return routeUnknown
	}
	return strings.ReplaceAll(pat.String(), "=*}", "}")
}

// bindRequest runs for every matched REST route before grpc-gateway decodes
// the request. It records the route, authenticates the caller (so that a 401
// is counted under its route) and counts it against its account's request
// rate (429 above it), bounds and checks the body, turns
// protojson's decode errors into messages a client can act on, and sets the
// Docjobs-Warning header for what the decoder is about to ignore.
func (s *Server) bindRequest(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, pathParams map[string]string) {
		label := routeLabel(r.Context())
		setRoute(r.Context(), label)
		account, err := s.deps.Auth.Authenticate(r.Context(), r.Header.Get("Authorization"))
		if err != nil {
			s.writeError(w, r, s.authFailure(r.Context(), err))
			return
		}
		r = r.WithContext(withAccount(r.Context(), account))
		if err := s.limitAccount(account); err != nil {
			s.writeError(w, r, err)
			return
		}
		rt, ok := s.routes[r.Method+" "+label]
		if !ok {
			next(w, r, pathParams)
			return
		}
		// ErrNotSupported only in tests' recorders.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.cfg.JSONReadTimeout))

		query := r.URL.Query()
		ignored, changed, err := queryFields(query, rt.request.Descriptor(), pathParams)
		if err != nil {
			s.writeError(w, r, status.Error(codes.InvalidArgument, err.Error()))
			return
		}
		if changed { // empty parameters dropped: the gateway binds what is left
			u := *r.URL
			u.RawQuery = query.Encode()
			r.URL = &u
		}
		more := 0
		if rt.body {
			body, err := s.readJSONBody(w, r)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			// PowerShell and other Windows tools start a body with a byte
			// order mark; neither decoder takes one.
			body = bytes.TrimPrefix(body, utf8BOM)
			if len(bytes.TrimSpace(body)) > 0 {
				names, n, err := ignoredFields(body, rt.request.Descriptor())
				if err != nil {
					s.writeError(w, r, status.Error(codes.InvalidArgument, err.Error()))
					return
				}
				ignored, more = append(ignored, names...), n
				msg, err := checkDecodes(body, rt.request)
				if err != nil {
					s.writeError(w, r, err)
					return
				}
				ignored = append(ignored, ignoredByMeaning(msg)...)
				ignored = append(ignored, boundByPath(msg, pathParams)...)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		if len(ignored) > 0 {
			w.Header().Set(WarningHeader, warningHeader(ignored, more))
		}
		next(w, r, pathParams)
	}
}

// readJSONBody reads the whole body, at most MaxJSONBodyBytes, within the
// read deadline bindRequest set (JSONReadTimeout).
func (s *Server) readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxJSONBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			return nil, errBodyTooLarge(s.cfg.MaxJSONBodyBytes)
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, s.bodyLate()
		}
		// The client closed the connection or reset the stream mid-body.
		return nil, status.Error(codes.InvalidArgument, "reading request body failed")
	}
	return body, nil
}

// bodyLate is the answer to a REST body that did not arrive within
// JSONReadTimeout: DEADLINE_EXCEEDED in the words a gRPC call whose message
// did not arrive gets (readGRPCRequest), and HTTP 408 as an upload that
// stalls gets (idleCut): the client was too slow, not an upstream.
func (s *Server) bodyLate() error {
	return &runtime.HTTPStatusError{
		HTTPStatus: http.StatusRequestTimeout,
		Err:        status.Errorf(codes.DeadlineExceeded, "the request body did not arrive within %s", s.cfg.JSONReadTimeout),
	}
}

// utf8BOM is the UTF-8 byte order mark.
var utf8BOM = []byte("\xef\xbb\xbf")

// checkDecodes decodes body as grpc-gateway will and returns the message.
// The walker already named wrong JSON types and numbers a field cannot
// hold; what is left (bad base64, an invalid timestamp) is answered here
// with protojson's description instead of reaching the gateway's generic
// error path.
func checkDecodes(body []byte, mt protoreflect.MessageType) (proto.Message, error) {
	msg := mt.New().Interface()
	err := protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(body, msg)
	if err == nil {
		return msg, nil
	}
	// protojson randomly uses a normal or a non-breaking space after its
	// "proto:" prefix so that nobody matches its messages; we only drop it.
	text := strings.TrimLeft(strings.TrimPrefix(err.Error(), "proto:"), " \u00a0")
	return nil, status.Error(codes.InvalidArgument, "invalid request body: "+text)
}
