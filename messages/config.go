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
}

// The module also takes the host's shared limits (sidecar.Limits): a page
// of messages is cut before SIDECAR_MAX_ANSWER_BYTES (its next_cursor
// continues it); one message's item (a framework's, as sent: a tool's
// output holding a file or a web page) is at most SESSION_MAX_ITEM_BYTES;
// the body of a message write (an append of up to MaxBatch messages, a
// PUT, a PATCH, a transaction) at most SIDECAR_MAX_MESSAGE_BODY_BYTES;
// SEARCH_INDEX says which message writes (and forks, for their copies)
// keep the relevance search index.

// Validate refuses values that parse but make no sense.
func (c Config) Validate() error {
	if c.MaxMessages < 1 || c.MaxMessages > MaxMessagesCeiling {
		return envconf.Invalid("SESSION_MAX_MESSAGES", "must be from 1 to %d, not %d", MaxMessagesCeiling, c.MaxMessages)
	}
	if c.CompactAfterTokens < 0 {
		return envconf.Invalid("SESSION_COMPACT_AFTER_TOKENS", "must be 0 (never) or more, not %d", c.CompactAfterTokens)
	}
	return nil
}

// MaxMessagesCeiling is the largest SESSION_MAX_MESSAGES: the work of a
// subtree delete or a token change above many descendants grows with it.
const MaxMessagesCeiling = 100000
