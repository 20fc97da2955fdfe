package messages

import (
	"github.com/agentsidecar/agentsidecar/envconf"
	"github.com/agentsidecar/agentsidecar/search"
)

// Config holds the module's settings (README's configuration table).
type Config struct {
	// MaxMessages caps the messages of one session, every branch counted:
	// past it an append is 409 session_full.
	MaxMessages int `env:"SESSION_MAX_MESSAGES" envDefault:"10000"`
	// CompactAfterTokens: reads carry compaction_suggested: true once the
	// latest path holds more tokens; 0 = never.
	CompactAfterTokens int64 `env:"SESSION_COMPACT_AFTER_TOKENS" envDefault:"0"`
	// MaxAnswerBytes caps a page of messages (the sessions module's answer
	// cap, the same setting): a page is cut before it and its next_cursor
	// continues it.
	MaxAnswerBytes int `env:"SIDECAR_MAX_ANSWER_BYTES" envDefault:"4194304"`
	// SearchIndex: which message writes (and forks, for their copies) keep
	// the relevance search index (package search, Mode): on-demand, eager
	// or off.
	SearchIndex search.Mode `env:"SEARCH_INDEX" envDefault:"on-demand"`
	// MaxItemBytes caps one message's item (a framework's item, as sent):
	// a tool's output holding a file or a web page is this size.
	MaxItemBytes int `env:"SESSION_MAX_ITEM_BYTES" envDefault:"1048576"`
	// MaxBodyBytes caps the body of a message write (an append of up to
	// MaxBatch messages, a PUT, a PATCH); every other route keeps
	// SIDECAR_MAX_BODY_BYTES. The bytes in flight are held by the host's
	// budget (SIDECAR_INFLIGHT_BYTES), not by this cap.
	MaxBodyBytes int64 `env:"SIDECAR_MAX_MESSAGE_BODY_BYTES" envDefault:"8388608"`
}

// Validate refuses values that parse but make no sense.
func (c Config) Validate() error {
	if c.MaxMessages < 1 || c.MaxMessages > MaxMessagesCeiling {
		return envconf.Invalid("SESSION_MAX_MESSAGES", "must be from 1 to %d, not %d", MaxMessagesCeiling, c.MaxMessages)
	}
	if c.CompactAfterTokens < 0 {
		return envconf.Invalid("SESSION_COMPACT_AFTER_TOKENS", "must be 0 (never) or more, not %d", c.CompactAfterTokens)
	}
	if c.MaxAnswerBytes < 4096 {
		return envconf.Invalid("SIDECAR_MAX_ANSWER_BYTES", "must be at least 4096, not %d", c.MaxAnswerBytes)
	}
	if _, err := c.SearchIndex.Parse(); err != nil {
		return err
	}
	if c.MaxBodyBytes < 64<<10 || c.MaxBodyBytes > MaxBodyCeiling {
		return envconf.Invalid("SIDECAR_MAX_MESSAGE_BODY_BYTES", "must be from %d to %d, not %d", 64<<10, MaxBodyCeiling, c.MaxBodyBytes)
	}
	if c.MaxItemBytes < 1024 || int64(c.MaxItemBytes) > c.MaxBodyBytes {
		return envconf.Invalid("SESSION_MAX_ITEM_BYTES", "must be from 1024 to SIDECAR_MAX_MESSAGE_BODY_BYTES (%d), not %d", c.MaxBodyBytes, c.MaxItemBytes)
	}
	return nil
}

// MaxBodyCeiling is the largest SIDECAR_MAX_MESSAGE_BODY_BYTES: one append
// is one script, and Redis holds its arguments whole while it runs.
const MaxBodyCeiling = 256 << 20

// MaxMessagesCeiling is the largest SESSION_MAX_MESSAGES: the work of a
// subtree delete or a token change above many descendants grows with it.
const MaxMessagesCeiling = 100000
