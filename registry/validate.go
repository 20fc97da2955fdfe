package registry

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"unicode/utf8"

	"github.com/agentsidecar/agentsidecar/sessionstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Limits of the registry's fields.
const (
	MaxTitleLength    = 256 // characters
	MaxMetadataKeys   = 32  // keys per session
	MaxMetaKeyLength  = 64  // characters of [A-Za-z0-9_.-]
	MaxMetaValueChars = 512 // characters
	MaxSummaryLength  = sessionstore.MaxSummaryLength
)

// checkMeta validates one metadata pair (value nil: a removal in a patch,
// allowed only when nullable).
func checkMeta(field, k string, v *string, nullable bool) error {
	if !sessionstore.ValidMetaKey(k) {
		return sidecar.BadRequest("invalid_field", "%s key %q must be 1-%d characters of A-Z a-z 0-9 _ . -", field, k, MaxMetaKeyLength)
	}
	if v == nil {
		if nullable {
			return nil
		}
		return sidecar.BadRequest("invalid_field", "field \"%s.%s\" must be a string (null removes a key only in PATCH)", field, k)
	}
	if !utf8.ValidString(*v) || utf8.RuneCountInString(*v) > MaxMetaValueChars {
		return sidecar.BadRequest("invalid_field", "field \"%s.%s\" must be at most %d characters of UTF-8", field, k, MaxMetaValueChars)
	}
	return nil
}

// createMeta validates a create's metadata map and returns its JSON ("" for
// none or empty).
func createMeta(m map[string]*string) (string, error) {
	if len(m) > MaxMetadataKeys {
		return "", sidecar.BadRequest("invalid_field", "field \"metadata\" holds %d keys; at most %d", len(m), MaxMetadataKeys)
	}
	flat := make(map[string]string, len(m))
	for k, v := range m {
		if err := checkMeta("metadata", k, v, false); err != nil {
			return "", err
		}
		flat[k] = *v
	}
	if len(flat) == 0 {
		return "", nil
	}
	b, err := json.Marshal(flat)
	return string(b), err
}

// checkSummary validates a summary.
func checkSummary(s string) error {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > MaxSummaryLength {
		return sidecar.BadRequest("invalid_field", "field \"summary\" must be at most %d characters of UTF-8", MaxSummaryLength)
	}
	return nil
}

// checkTitle validates a title.
func checkTitle(t string) error {
	if !utf8.ValidString(t) || utf8.RuneCountInString(t) > MaxTitleLength {
		return sidecar.BadRequest("invalid_field", "field \"title\" must be at most %d characters of UTF-8, or null", MaxTitleLength)
	}
	return nil
}

// newSessionID is a random lowercase UUID (version 4).
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return uuidString(b)
}

// keyedSessionID is the session id of a create with no session_id but an
// Idempotency-Key: a name-based UUID (version 5 layout, SHA-1 of user and
// key), so a retry names the same session.
func keyedSessionID(user, key string) string {
	sum := sha1.Sum([]byte("agentsidecar/create\x00" + user + "\x00" + key))
	var b [16]byte
	copy(b[:], sum[:16])
	b[6] = b[6]&0x0f | 0x50
	b[8] = b[8]&0x3f | 0x80
	return formatUUID(b)
}

func uuidString(b [16]byte) string {
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return formatUUID(b)
}

func formatUUID(b [16]byte) string {
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
