package messages

import "github.com/agentsidecar/agentsidecar/envconf"

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
	// SearchIndex: message writes (and forks, for their copies) keep the relevance search index (about
	// 50 µs of Redis time per append of a short message); false leaves new
	// and changed messages out of it.
	SearchIndex bool `env:"SEARCH_INDEX" envDefault:"true"`
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
	return nil
}

// MaxMessagesCeiling is the largest SESSION_MAX_MESSAGES: the work of a
// subtree delete or a token change above many descendants grows with it.
const MaxMessagesCeiling = 100000
