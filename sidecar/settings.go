package sidecar

import (
	"strings"

	"github.com/agentsidecar/agentsidecar/envconf"
)

// Limits are the settings several modules share (README's configuration
// table): the host reads and checks them once, with its own Config, and
// hands them to every module in Deps.Limits. A module never declares one
// of these variables itself.
type Limits struct {
	// MaxAnswerBytes caps a list answer (entries, a page of messages, of
	// ADK events, a checkpoint read): past it the answer holds fewer
	// elements, says so (Sidecar-Truncated, a next cursor), and never
	// holds more than ReserveAnswer grants.
	MaxAnswerBytes int `env:"SIDECAR_MAX_ANSWER_BYTES" envDefault:"4194304"`
	// MaxMessageBodyBytes caps the body of a message write (an append of
	// a framework's turn, a PUT, a PATCH, a transaction) and of a
	// checkpoint put; every other route keeps SIDECAR_MAX_BODY_BYTES. The
	// bytes in flight are held by the host's budget, not by this cap.
	MaxMessageBodyBytes int64 `env:"SIDECAR_MAX_MESSAGE_BODY_BYTES" envDefault:"8388608"`
	// MaxItemBytes caps one item as sent: a message's framework item, a
	// serialized checkpoint, channel value or write.
	MaxItemBytes int `env:"SESSION_MAX_ITEM_BYTES" envDefault:"1048576"`
	// SearchIndex is which writes keep the relevance search index.
	SearchIndex SearchIndex `env:"SEARCH_INDEX" envDefault:"on-demand"`
}

// The bounds of the shared settings.
const (
	// MinAnswerBytes is the smallest SIDECAR_MAX_ANSWER_BYTES: room for
	// one element and its answer's frame.
	MinAnswerBytes = 4096
	// MinMessageBodyBytes and MaxMessageBodyCeiling bound
	// SIDECAR_MAX_MESSAGE_BODY_BYTES: one write is one script, and Redis
	// holds its arguments whole while it runs.
	MinMessageBodyBytes   = 64 << 10
	MaxMessageBodyCeiling = 256 << 20
	// MinItemBytes is the smallest SESSION_MAX_ITEM_BYTES (the largest is
	// SIDECAR_MAX_MESSAGE_BODY_BYTES).
	MinItemBytes = 1024
)

// Validate refuses values that parse but make no sense; each error names
// its variable.
func (l Limits) Validate() error {
	if l.MaxAnswerBytes < MinAnswerBytes {
		return envconf.Invalid("SIDECAR_MAX_ANSWER_BYTES", "must be at least %d, not %d", MinAnswerBytes, l.MaxAnswerBytes)
	}
	if l.MaxMessageBodyBytes < MinMessageBodyBytes || l.MaxMessageBodyBytes > MaxMessageBodyCeiling {
		return envconf.Invalid("SIDECAR_MAX_MESSAGE_BODY_BYTES", "must be from %d to %d, not %d", MinMessageBodyBytes, MaxMessageBodyCeiling, l.MaxMessageBodyBytes)
	}
	if l.MaxItemBytes < MinItemBytes || int64(l.MaxItemBytes) > l.MaxMessageBodyBytes {
		return envconf.Invalid("SESSION_MAX_ITEM_BYTES", "must be from %d to SIDECAR_MAX_MESSAGE_BODY_BYTES (%d), not %d", MinItemBytes, l.MaxMessageBodyBytes, l.MaxItemBytes)
	}
	return nil
}

// SearchIndex is SEARCH_INDEX as parsed: OnDemand, Eager or Off (package
// search's Mode takes these values).
type SearchIndex string

// The values of SEARCH_INDEX.
const (
	// SearchOnDemand (the default): a user's writes are indexed only while
	// the user has an index, which the user's first relevance search makes.
	SearchOnDemand SearchIndex = "on-demand"
	// SearchEager: every write is indexed.
	SearchEager SearchIndex = "eager"
	// SearchOff: no write is indexed.
	SearchOff SearchIndex = "off"
)

// UnmarshalText parses SEARCH_INDEX: on-demand, eager or off, and true
// and false for eager and off; anything else is an *envconf.Error.
func (m *SearchIndex) UnmarshalText(b []byte) error {
	switch strings.ToLower(strings.TrimSpace(string(b))) {
	case "on-demand", "ondemand", "":
		*m = SearchOnDemand
	case "eager", "true", "1":
		*m = SearchEager
	case "off", "false", "0":
		*m = SearchOff
	default:
		return envconf.Invalid("SEARCH_INDEX", "%q is not a search index mode (on-demand, eager or off; true and false mean eager and off)", string(b))
	}
	return nil
}
