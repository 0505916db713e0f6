package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	docjobsv1 "github.com/docjobs/docjobs/gen/docjobs/v1"
)

// rawCodec sends and receives message bytes as they are, so that a test can
// send what no generated client would.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, ok := v.([]byte)
	if !ok {
		return nil, fmt.Errorf("rawCodec: %T is not []byte", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	p, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("rawCodec: %T is not *[]byte", v)
	}
	*p = data.Materialize()
	return nil
}

// createWithTitle is a CreateJobRequest whose title is the given bytes, valid
// UTF-8 or not.
func createWithTitle(title string) []byte {
	fd := (&docjobsv1.CreateJobRequest{}).ProtoReflect().Descriptor().Fields().ByName("title")
	b, _ := proto.Marshal(&docjobsv1.CreateJobRequest{SourceUrls: []string{"https://a.test/x.txt"}})
	b = protowire.AppendTag(b, fd.Number(), protowire.BytesType)
	return protowire.AppendString(b, title)
}

// protobuf refuses a string that is not UTF-8 as "string field contains
// invalid UTF-8", naming no field; REST names it, and so does gRPC now, in
// the same words (audit-contract F3).
func TestInvalidUTF8IsNamedByItsField(t *testing.T) {
	md := (&docjobsv1.CreateJobRequest{}).ProtoReflect().Descriptor()
	field := func(b []byte, md protoreflect.MessageDescriptor, name string, v []byte) []byte {
		b = protowire.AppendTag(b, md.Fields().ByName(protoreflect.Name(name)).Number(), protowire.BytesType)
		return protowire.AppendBytes(b, v)
	}
	entry := func(k, v string) []byte {
		return protowire.AppendString(protowire.AppendTag(
			protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), k), 2, protowire.BytesType), v)
	}
	ocr := (&docjobsv1.Ocr{}).ProtoReflect().Descriptor()
	valid, _ := proto.Marshal(&docjobsv1.CreateJobRequest{SourceUrls: []string{"https://a.test/x"}, Title: "t",
		Metadata: map[string]string{"a": "b"}, Ocr: &docjobsv1.Ocr{Model: "m", ProviderKey: "k"}})
	tests := []struct {
		name string
		msg  []byte
		want string
	}{
		{"a valid message", valid, ""},
		{"a top-level string", field(valid, md, "title", []byte("a\xffb")), "title: invalid UTF-8 in string"},
		{"a list element by its index", field(field(valid, md, "prompts", []byte("p")), md, "prompts", []byte("\xe2\x82")), "prompts[1]: invalid UTF-8 in string"},
		{"a nested field", field(valid, md, "ocr", field(nil, ocr, "provider_key", []byte("sk-\xed\xa0\x80"))), "ocr.providerKey: invalid UTF-8 in string"},
		{"a map value under its key", field(valid, md, "metadata", entry("k", "\xc0\xaf")), `metadata["k"]: invalid UTF-8 in string`},
		{"a map key", field(valid, md, "metadata", entry("\xff", "v")), "metadata: invalid UTF-8 in a map key"},
		{"bytes that are not the wire format say nothing", []byte("\xff\xff\xff"), ""},
		{"an unknown field's bytes are no string", protowire.AppendBytes(protowire.AppendTag(valid, 999, protowire.BytesType), []byte("\xff")), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := invalidUTF8(tt.msg, md, ""); got != tt.want {
				t.Errorf("invalidUTF8 = %q, want %q", got, tt.want)
			}
			if tt.want == "" {
				return
			}
			err := proto.Unmarshal(tt.msg, &docjobsv1.CreateJobRequest{})
			if err == nil || !strings.Contains(err.Error(), "invalid UTF-8") {
				t.Errorf("protobuf takes the message (%v): the case tests nothing", err)
			}
		})
	}
}

func TestGRPCMessagesThatDoNotDecodeAreInvalidArgument(t *testing.T) {
	env := startServer(t)
	_, conn, as := grpcClient(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	create := "/" + docjobsv1.JobService_ServiceDesc.ServiceName + "/CreateJob"
	forged := protowire.AppendTag(createWithTitle("t"), decodeMarkNumber, protowire.BytesType)
	forged = protowire.AppendString(forged, "guessed nonce: no such field")

	tests := []struct {
		name        string
		method      string
		key         string
		msg         []byte
		wantCode    codes.Code
		wantMessage string // contained in the status message
	}{
		{"bytes that are not the wire format", create, keyAlice, []byte("\xff\xff\xff"),
			codes.InvalidArgument, "invalid request message: cannot parse invalid wire-format data"},
		{"invalid UTF-8 in a string field names it as REST does", create, keyAlice, createWithTitle("\xff\xfe"),
			codes.InvalidArgument, "invalid request message: title: invalid UTF-8 in string"},
		{"a caller without a key learns only that", create, "", []byte("\xff\xff\xff"),
			codes.Unauthenticated, ""},
		{"the health service, which needs no key, too", "/grpc.health.v1.Health/Check", "", []byte("\xff\xff\xff"),
			codes.InvalidArgument, "invalid request message"},
		{"a valid message still reaches the service", create, keyAlice, createWithTitle("ok"), codes.OK, ""},
		{"a client sending the mark's field without the nonce sends an unknown field", create, keyAlice, forged, codes.OK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			callCtx := ctx
			if tt.key != "" {
				callCtx = as(ctx, tt.key)
			}
			var reply []byte
			err := conn.Invoke(callCtx, tt.method, tt.msg, &reply, grpc.ForceCodecV2(rawCodec{}))
			st := status.Convert(err)
			if st.Code() != tt.wantCode || !strings.Contains(st.Message(), tt.wantMessage) {
				t.Errorf("got %v %q, want %v with %q", st.Code(), st.Message(), tt.wantCode, tt.wantMessage)
			}
		})
	}

	t.Run("a stream message that does not decode ends the stream with InvalidArgument", func(t *testing.T) {
		desc := &grpc.StreamDesc{StreamName: "UploadFile", ClientStreams: true}
		stream, err := conn.NewStream(as(ctx, keyAlice), desc, "/"+docjobsv1.JobService_ServiceDesc.ServiceName+"/UploadFile", grpc.ForceCodecV2(rawCodec{}))
		if err != nil {
			t.Fatal(err)
		}
		first, _ := proto.Marshal(&docjobsv1.UploadFileRequest{Name: "a.txt", Content: []byte("abc")})
		for _, msg := range [][]byte{first, []byte("\xff\xff\xff")} {
			if err := stream.SendMsg(msg); err != nil {
				t.Fatal(err)
			}
		}
		_ = stream.CloseSend()
		var reply []byte
		st := status.Convert(stream.RecvMsg(&reply))
		if st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), "invalid request message: cannot parse invalid wire-format data") {
			t.Errorf("got %v %q, want InvalidArgument naming the wire format", st.Code(), st.Message())
		}
	})
}
