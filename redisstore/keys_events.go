package redisstore

// Keys of live events. Every session script appends its event to the
// session's stream (lua/lib/events.lua derives the names from the record
// key's tag, as these builders do) and publishes an empty message on the
// stream's own channel, EventsChannel(stream); the events module reads them.

// EventsChannelPrefix begins the Pub/Sub channel of every event stream:
// sidecar:events:<stream key>, grantable to the sidecar's Redis user by
// the ACL channel pattern &sidecar:events:*.
const EventsChannelPrefix = "sidecar:events:"

// EventsChannel is the Pub/Sub channel on which every script that appends
// an event to stream publishes (an empty message): sidecar:events:<stream>,
// with the stream key's Cluster tag inside it. A sidecar subscribes to the
// channels of the streams its clients watch, and only while they do;
// readers also re-read on their own, so a lost message only delays an
// event.
func EventsChannel(stream string) string { return EventsChannelPrefix + stream }

// SessionEvents is the session's event stream:
// agent_session_events:<tag><u>:<s>, one of the session's own keys (slid,
// persisted with them). Deleting the session empties it but for its
// `deleted` event, kept a short while as a tombstone.
func (l Layout) SessionEvents(user, session string) string {
	return l.SessionKey(SessionEventsFamily, user, session)
}

// UserEvents is the user's event stream (user-level changes):
// agent_user_events:<tag><u>, living SESSION_TTL_SECONDS from its last
// event.
func (l Layout) UserEvents(user string) string {
	return l.UserKey(UserEventsFamily, user)
}
