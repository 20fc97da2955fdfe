package client

import (
	"encoding/json"
	"time"
)

// Event is one event of a session's (or a user's) stream.
type Event struct {
	// ID is the event's id ("<ms>-<seq>"); empty for "reconnected".
	ID string
	// Type is the event's type: entry_appended, feedback, status, deleted,
	// ..., x-<name> for custom events, and "reconnected" (Data
	// {gap, oldest_id}) first after every resume.
	Type string
	// Data is the event's JSON: the stored object, {id, kind, truncated}
	// past 8 KiB, or the custom event's data.
	Data json.RawMessage
}

// Reconnected is the data of a "reconnected" event: Gap is true when events
// after the client's last id were trimmed from the stream before it came
// back; OldestID is the oldest event kept (nil: none).
type Reconnected struct {
	Gap      bool    `json:"gap"`
	OldestID *string `json:"oldest_id"`
}

// EventsOptions set where a stream starts and how it reconnects.
type EventsOptions struct {
	// After resumes after this event id ("0": every event kept); empty:
	// only events after the stream opens.
	After string
	// Retry is the wait before reconnecting after the stream ended or
	// failed; 0 is what the sidecar asks (retry: 3000 ms).
	Retry time.Duration
}

// CustomEvent is a caller's own event (publishSessionEvent).
type CustomEvent struct {
	Event string `json:"event"` // x-<name>
	Data  any    `json:"data"`
}

// EventID is a published event's id.
type EventID struct {
	ID string `json:"id"`
}

// AbortRequest is a pending abort request of a session.
type AbortRequest struct {
	AbortRequestedAt time.Time `json:"abort_requested_at"`
}
