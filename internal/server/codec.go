package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// A gRPC request message that does not decode (bytes that are not the
// wire format, invalid UTF-8 in a string field) is the caller's fault:
// INVALID_ARGUMENT, as a malformed REST body is 400. grpc-go cannot be told
// so through its codec: whatever error a codec's Unmarshal returns, a status
// included, recv wraps it in INTERNAL "grpc: failed to unmarshal the
// received message" (rpc_util.go, grpc-go 1.85), before any interceptor runs.
//
// So the server's codec never fails a decode. It empties the message and
// marks it with the error, as an unknown field no client can forge (the
// largest field number, holding a per-server random nonce and the error
// text), and an interceptor after authentication answers a marked message
// with INVALID_ARGUMENT: a caller without a key still gets UNAUTHENTICATED,
// as over REST. The mark lives in the message, not in a table beside it,
// because grpc-go can drop a decoded message before any interceptor sees
// it (a unary call that sends two), and a table entry would then never be
// removed.

// decodeMarkNumber is the field number of the mark.
const decodeMarkNumber = protowire.MaxValidNumber

// requestCodec is grpc-go's "proto" codec, with decode failures marked in
// the message instead of returned.
type requestCodec struct {
	proto encoding.CodecV2
	nonce []byte
}

func newRequestCodec() *requestCodec {
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails on supported platforms
	return &requestCodec{proto: encoding.GetCodecV2(grpcproto.Name), nonce: nonce}
}

// Name is grpc's own, so clients see no difference (the content-subtype of
// the response follows the request's).
func (c *requestCodec) Name() string { return grpcproto.Name }

func (c *requestCodec) Marshal(v any) (mem.BufferSlice, error) { return c.proto.Marshal(v) }

func (c *requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.proto.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	m, ok := v.(proto.Message)
	if !ok { // not a message at all: a server bug, which INTERNAL describes
		return err
	}
	// protobuf's "proto:" prefix is followed by a normal or a non-breaking
	// space, chosen at random; only the text after it is of use.
	text := strings.TrimLeft(strings.TrimPrefix(err.Error(), "proto:"), " \u00a0")
	mark := protowire.AppendTag(nil, decodeMarkNumber, protowire.BytesType)
	mark = protowire.AppendBytes(mark, append(bytes.Clone(c.nonce), text...))
	proto.Reset(m)
	m.ProtoReflect().SetUnknown(mark)
	return nil
}

// decodeError is the INVALID_ARGUMENT answer for a message the codec
// marked, or nil.
func (c *requestCodec) decodeError(v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return nil
	}
	raw := m.ProtoReflect().GetUnknown()
	num, typ, n := protowire.ConsumeTag(raw)
	if n < 0 || num != decodeMarkNumber || typ != protowire.BytesType {
		return nil
	}
	val, m2 := protowire.ConsumeBytes(raw[n:])
	if m2 < 0 || n+m2 != len(raw) || !bytes.HasPrefix(val, c.nonce) {
		return nil
	}
	return status.Error(codes.InvalidArgument, "invalid request message: "+string(val[len(c.nonce):]))
}

// decodedUnary answers a request message that did not decode. It runs after
// authentication, as the REST body is read after it.
func (s *Server) decodedUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := s.codec.decodeError(req); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

// decodedStream makes a stream's receive of a message that did not decode
// fail with INVALID_ARGUMENT.
func (s *Server) decodedStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return handler(srv, &decodedRecvStream{ServerStream: ss, codec: s.codec})
}

type decodedRecvStream struct {
	grpc.ServerStream
	codec *requestCodec
}

func (d *decodedRecvStream) RecvMsg(m any) error {
	if err := d.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	return d.codec.decodeError(m)
}
