package sidecar

import (
	"encoding/base64"
	"encoding/binary"
	"net/http"
)

// A cursor is where the next page of a listing begins, answered as
// next_cursor and sent back as ?cursor=: opaque to callers, and one format
// for every listing. It is the unpadded base64url of a version byte
// (cursorVersion) and the listing's fields, each an unsigned varint length
// and its bytes; a listing decides what its fields mean (a score and a
// member, a position). A cursor the API did not return, or one of another
// version, is BadCursor: 400 invalid_cursor, whatever the listing.
const cursorVersion = 1

// CodeBadCursor is the API code of every bad cursor.
const CodeBadCursor = "invalid_cursor"

// maxCursorLength bounds a cursor's text, so decoding a hostile one is
// cheap: every cursor the API answers is far shorter.
const maxCursorLength = 4096

// EncodeCursor is the cursor holding fields, in order.
func EncodeCursor(fields ...string) string {
	b := []byte{cursorVersion}
	for _, f := range fields {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor is the n fields of cursor c, or the 400 invalid_cursor
// (BadCursor) when c is not a cursor EncodeCursor made with n fields.
func DecodeCursor(c string, n int) ([]string, error) {
	if len(c) > maxCursorLength {
		return nil, NotACursor()
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) == 0 || b[0] != cursorVersion {
		return nil, NotACursor()
	}
	b = b[1:]
	fields := make([]string, 0, n)
	for len(b) > 0 && len(fields) < n {
		size, k := binary.Uvarint(b)
		if k <= 0 || size > uint64(len(b)-k) {
			return nil, NotACursor()
		}
		fields = append(fields, string(b[k:k+int(size)]))
		b = b[k+int(size):]
	}
	if len(fields) != n || len(b) > 0 || EncodeCursor(fields...) != c {
		// the last: another spelling of the same bytes (a longer varint,
		// base64's spare bits set) is no cursor the API returned either
		return nil, NotACursor()
	}
	return fields, nil
}

// BadCursor is the one answer to a cursor the API did not return (or
// one that no longer names a place in what it lists): 400 invalid_cursor,
// the message saying which parameter and why.
func BadCursor(format string, args ...any) *Error {
	return Errorf(http.StatusBadRequest, CodeBadCursor, format, args...)
}

// NotACursor is DecodeCursor's refusal, and a listing's for a cursor whose
// fields do not parse.
func NotACursor() *Error { return BadCursor("cursor is not one this API returned") }
