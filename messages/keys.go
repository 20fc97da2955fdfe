package messages

import "github.com/agentsidecar/agentsidecar/redisstore"

// The module's own key families: a session's messages are five keys
// whatever their number, all in the session's slot and all session
// families, so the core slides and deletes those the session has (the
// record's fams). Two of the five, the messages and their order, are
// declared in redisstore (redisstore.MessagesFamily,
// redisstore.MessageOrderFamily): the registry module reads them too.
var (
	// TreeFamily: id -> parent, jump, depth, path tokens, seq; and the
	// ring of keys (hash).
	TreeFamily = redisstore.Owner("messages").Session("message tree", "agent_session_msg_tree", "mt", redisstore.KindHash, "message id → its parent, jump pointer, depth, path tokens, append number, tokens and fingerprint, so a page of a path costs O(limit + log n); and the ring of the 1 000 newest keys, ` k<Idempotency-Key>` → the ids an append stored, ` k tx <operation_id>` → a history transaction's digest and ids (each `\t<slot>`), ` s<slot>` → the key in that slot (the record's `msg_keys` counts them), so a retry stores nothing; the ring goes with a clear")
	// ChildrenFamily: "<parent>\0<seq>\0<id>" (zset, read by lex range).
	ChildrenFamily = redisstore.Owner("messages").Session("message children", "agent_session_msg_children", "mc", redisstore.KindZSet, "one member `<parent>\\0<append number>\\0<id>` per message (score 0, read by lex range): a message's branches, oldest first")
	// The staged history of a replace_history too big for one script
	// (messages_stage_open.lua): the new messages, tree, children and order,
	// renamed over the session's own at its commit.
	StagedMessagesFamily = redisstore.Owner("messages").Session("staged messages", "agent_session_msgs_staged", "sm", redisstore.KindHash, "while a big replace_history stages: the new history's messages (as `agent_session_msgs`), renamed over them at its commit; gone with a dropped stage")
	StagedTreeFamily     = redisstore.Owner("messages").Session("staged message tree", "agent_session_msg_tree_staged", "sn", redisstore.KindHash, "while a big replace_history stages: the new history's tree (as `agent_session_msg_tree`), the ring copied in at its commit")
	StagedChildrenFamily = redisstore.Owner("messages").Session("staged message children", "agent_session_msg_children_staged", "sk", redisstore.KindZSet, "while a big replace_history stages: the new history's children (as `agent_session_msg_children`)")
	StagedOrderFamily    = redisstore.Owner("messages").Session("staged message order", "agent_session_msg_order_staged", "so", redisstore.KindZSet, "while a big replace_history stages: the new history's order (as `agent_session_msg_order`)")
	// CompactionsFamily: the compactions in force (hash).
	CompactionsFamily = redisstore.Owner("messages").Session("compactions", "agent_session_compactions", "cp", redisstore.KindHash, "a session's compactions in force (at most 100): id → `{id, summary, from_id, to_id, created_at}`, `#<id>` → its range and summary tokens")
)

// Keys are the keys of one session's messages.
type Keys struct {
	Messages, Tree, Children, Order, Compactions string
}

// SessionKeys returns the keys of the messages of session (user, session)
// on layout l.
func SessionKeys(l redisstore.Layout, user, session string) Keys {
	return Keys{
		Messages:    l.SessionKey(redisstore.MessagesFamily, user, session),
		Tree:        l.SessionKey(TreeFamily, user, session),
		Children:    l.SessionKey(ChildrenFamily, user, session),
		Order:       l.SessionKey(redisstore.MessageOrderFamily, user, session),
		Compactions: l.SessionKey(CompactionsFamily, user, session),
	}
}

// StagedKeys returns the keys of the staged history of session (user,
// session) on layout l (a replace_history in steps; no compactions).
func StagedKeys(l redisstore.Layout, user, session string) Keys {
	return Keys{
		Messages: l.SessionKey(StagedMessagesFamily, user, session),
		Tree:     l.SessionKey(StagedTreeFamily, user, session),
		Children: l.SessionKey(StagedChildrenFamily, user, session),
		Order:    l.SessionKey(StagedOrderFamily, user, session),
	}
}
