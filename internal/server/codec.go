package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
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
// the message instead of returned, and its buffers taken from a pool of
// finer sizes (codecBufferExponents).
type requestCodec struct {
	proto encoding.CodecV2
	pool  mem.BufferPool
	nonce []byte
}

// codecBufferExponents are the sizes (powers of two) of the buffers the
// codec encodes a message into and decodes one from: grpc-go's default
// pool's (256 B, 4, 16 and 32 KiB, 1 MiB) and every power of two between
// 32 KiB and 1 MiB. grpc-go's own codec takes a 1 MiB buffer for any
// message above 32 KiB, so a 33 KiB message held 1 MiB while it was
// decoded, or while its answer waited on a client that did not read: 100
// server reflection streams of 60 KB requests, unread, took the server
// from 53 to 288 MB.
var codecBufferExponents = []uint8{8, 12, 14, 15, 16, 17, 18, 19, 20}

func newRequestCodec() *requestCodec {
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails on supported platforms
	pool, err := mem.NewBinaryTieredBufferPool(codecBufferExponents...)
	if err != nil { // the exponents are constants within range
		panic(fmt.Sprintf("server: codec buffer pool: %v", err))
	}
	return &requestCodec{proto: encoding.GetCodecV2(grpcproto.Name), pool: pool, nonce: nonce}
}

// Name is grpc's own, so clients see no difference (the content-subtype of
// the response follows the request's).
func (c *requestCodec) Name() string { return grpcproto.Name }

// Marshal is grpc-go's proto codec's, with c.pool's buffers.
func (c *requestCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return c.proto.Marshal(v) // grpc-go's error (or a v1 message)
	}
	size := proto.Size(m)
	opts := proto.MarshalOptions{UseCachedSize: true} // the size was just computed
	if mem.IsBelowBufferPoolingThreshold(size) {
		b, err := opts.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	buf := c.pool.Get(size)
	if _, err := opts.MarshalAppend((*buf)[:0], m); err != nil {
		c.pool.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, c.pool)}, nil
}

func (c *requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.decode(data, v)
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

// decode is grpc-go's proto codec's Unmarshal, with c.pool's buffers.
func (c *requestCodec) decode(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return c.proto.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(c.pool)
	defer buf.Free()
	err := proto.Unmarshal(buf.ReadOnlyData(), m) // copies what it keeps
	if err != nil {
		// protobuf says "string field contains invalid UTF-8", naming no
		// field; REST names it (the walker's stringError), and so does this.
		if where := invalidUTF8(buf.ReadOnlyData(), m.ProtoReflect().Descriptor(), ""); where != "" {
			return errors.New(where)
		}
	}
	return err
}

// invalidUTF8 returns, for the wire-format message b of type md, where the
// first string field holding bytes that are not UTF-8 is, in the words REST
// uses for the same field ("title: invalid UTF-8 in string",
// `metadata["k"]: …`, "prompts[1]: …"); "" when there is none or b does not
// parse (protobuf's own error then says why). Only proto3 strings are
// checked: they are what protobuf refuses.
func invalidUTF8(b []byte, md protoreflect.MessageDescriptor, path string) string {
	seen := map[protowire.Number]int{} // elements of each list so far
	where, _ := eachBytesField(b, func(num protowire.Number, v []byte) string {
		fd := md.Fields().ByNumber(num)
		if fd == nil {
			return ""
		}
		p := join(path, fd.JSONName())
		if fd.IsList() {
			p += "[" + strconv.Itoa(seen[num]) + "]"
			seen[num]++
		}
		switch {
		case fd.IsMap():
			return invalidUTF8InEntry(v, fd, p)
		case fd.Kind() == protoreflect.StringKind && fd.Syntax() == protoreflect.Proto3 && !utf8.Valid(v):
			return p + ": invalid UTF-8 in string"
		case fd.Kind() == protoreflect.MessageKind:
			return invalidUTF8(v, fd.Message(), p)
		}
		return ""
	})
	return where
}

// invalidUTF8InEntry is invalidUTF8 for one entry of the map field fd at
// path: a key that is not UTF-8 is named as REST names a member name, a
// value under its key.
func invalidUTF8InEntry(b []byte, fd protoreflect.FieldDescriptor, path string) string {
	var key []byte
	var value []byte
	if _, ok := eachBytesField(b, func(num protowire.Number, v []byte) string {
		switch num {
		case 1:
			key = v
		case 2:
			value = v
		}
		return ""
	}); !ok {
		return ""
	}
	if fd.MapKey().Kind() == protoreflect.StringKind && !utf8.Valid(key) {
		return path + ": invalid UTF-8 in a map key"
	}
	switch vd := fd.MapValue(); {
	case vd.Kind() == protoreflect.StringKind && !utf8.Valid(value):
		return mapEntry(path, string(key)) + ": invalid UTF-8 in string"
	case vd.Kind() == protoreflect.MessageKind:
		return invalidUTF8(value, vd.Message(), mapEntry(path, string(key)))
	}
	return ""
}

// eachBytesField calls each with the number and bytes of every
// length-delimited field of the wire-format message b, in order, skipping
// fields of other wire types, until each answers something other than "".
// It returns that answer, and false (with "") when b does not parse.
func eachBytesField(b []byte, each func(num protowire.Number, v []byte) string) (string, bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return "", false
		}
		b = b[n:]
		if typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return "", false
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return "", false
		}
		b = b[n:]
		if where := each(num, v); where != "" {
			return where, true
		}
	}
	return "", true
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
