package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
)

func checkpointsPath(user, session string, more ...string) (string, error) {
	return apiPath(append([]string{"users", user, "sessions", session, "checkpoints"}, more...)...)
}

// PutCheckpoint stores a checkpoint of thread session (putCheckpoint); a
// put of an id the namespace holds replaces it. Past
// CHECKPOINTS_MAX_PER_THREAD: 409 checkpoints_full.
func (c *Client) PutCheckpoint(ctx context.Context, user, session string, req PutCheckpointRequest) (*CheckpointRef, error) {
	p, err := checkpointsPath(user, session)
	return answer[CheckpointRef](ctx, c, http.MethodPost, p, req, err)
}

// PutCheckpointWrites stores a task's pending writes
// (putCheckpointWrites); a retry stores each once.
func (c *Client) PutCheckpointWrites(ctx context.Context, user, session string, req PutCheckpointWritesRequest) (*CheckpointWritesStored, error) {
	p, err := checkpointsPath(user, session, "writes")
	return answer[CheckpointWritesStored](ctx, c, http.MethodPost, p, req, err)
}

// GetCheckpointTuple reads a checkpoint of namespace ns by id, or the
// newest with id "" (getCheckpointTuple); IsNotFound when none.
func (c *Client) GetCheckpointTuple(ctx context.Context, user, session, ns, id string) (*CheckpointTuple, error) {
	p, err := checkpointsPath(user, session, "tuple")
	q := url.Values{"checkpoint_ns": {ns}}
	if id != "" {
		q.Set("checkpoint_id", id)
	}
	out, _, err := call[CheckpointTuple](ctx, c, request{method: http.MethodGet, path: p, query: q}, err)
	return out, err
}

// ListCheckpoints reads a page of checkpoints, newest id first
// (listCheckpoints).
func (c *Client) ListCheckpoints(ctx context.Context, user, session string, o ListCheckpointsOptions) (*CheckpointPage, error) {
	p, err := checkpointsPath(user, session)
	q := url.Values{}
	if o.NS != nil {
		q.Set("checkpoint_ns", *o.NS)
	}
	if o.Before != "" {
		q.Set("before", o.Before)
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if len(o.Filter) > 0 {
		f, ferr := json.Marshal(o.Filter)
		if ferr != nil {
			return nil, ferr
		}
		q.Set("filter", string(f))
	}
	out, _, err := call[CheckpointPage](ctx, c, request{method: http.MethodGet, path: p, query: q}, err)
	return out, err
}
