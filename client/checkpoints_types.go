package client

import "encoding/json"

// A LangGraph thread's checkpoints (module checkpoints; a thread is a
// session): the schemas of openapi/openapi.json. The TypeScript client's
// SidecarCheckpointSaver is LangGraph's saver on these calls.

// CheckpointBlob is a value a saver serialized: its serde's type and the
// standard base64 of its bytes, stored as it came.
type CheckpointBlob struct {
	Type string `json:"type"`
	Data string `json:"data"`
}

// CheckpointChannelValue is one channel's value at a version.
type CheckpointChannelValue struct {
	Channel string `json:"channel"`
	Version string `json:"version"`
	Type    string `json:"type"`
	Data    string `json:"data"`
}

// CheckpointWrite is a pending write of a task. TaskID and TaskPath are
// set in answers (a request names them once, in its body).
type CheckpointWrite struct {
	TaskID   string `json:"task_id,omitempty"`
	TaskPath string `json:"task_path,omitempty"`
	Idx      int    `json:"idx"`
	Channel  string `json:"channel"`
	Type     string `json:"type"`
	Data     string `json:"data"`
}

// PutCheckpointRequest is a LangGraph put: the checkpoint serialized
// without its channel values, its metadata, every channel's version and
// the values of the channels the put changed.
type PutCheckpointRequest struct {
	CheckpointNS       string                   `json:"checkpoint_ns"`
	CheckpointID       string                   `json:"checkpoint_id"`
	ParentCheckpointID *string                  `json:"parent_checkpoint_id,omitempty"`
	Checkpoint         CheckpointBlob           `json:"checkpoint"`
	Metadata           map[string]any           `json:"metadata,omitempty"`
	ChannelVersions    map[string]string        `json:"channel_versions,omitempty"`
	ChannelValues      []CheckpointChannelValue `json:"channel_values,omitempty"`
}

// CheckpointRef names a stored checkpoint.
type CheckpointRef struct {
	CheckpointNS string `json:"checkpoint_ns"`
	CheckpointID string `json:"checkpoint_id"`
}

// PutCheckpointWritesRequest is a LangGraph putWrites.
type PutCheckpointWritesRequest struct {
	CheckpointNS string            `json:"checkpoint_ns"`
	CheckpointID string            `json:"checkpoint_id"`
	TaskID       string            `json:"task_id"`
	TaskPath     string            `json:"task_path,omitempty"`
	Writes       []CheckpointWrite `json:"writes"`
}

// CheckpointWritesStored is how many writes a putWrites stored.
type CheckpointWritesStored struct {
	Stored int `json:"stored"`
}

// CheckpointTuple is a checkpoint as read back: its channels' values at
// its versions and its pending writes in (task_path, task_id, idx) order.
type CheckpointTuple struct {
	CheckpointNS       string                   `json:"checkpoint_ns"`
	CheckpointID       string                   `json:"checkpoint_id"`
	ParentCheckpointID *string                  `json:"parent_checkpoint_id"`
	Checkpoint         CheckpointBlob           `json:"checkpoint"`
	Metadata           json.RawMessage          `json:"metadata"`
	ChannelValues      []CheckpointChannelValue `json:"channel_values"`
	PendingWrites      []CheckpointWrite        `json:"pending_writes"`
}

// CheckpointPage is a page of a list, newest id first; NextBefore (when
// set) continues it as ListCheckpointsOptions.Before.
type CheckpointPage struct {
	Checkpoints []CheckpointTuple `json:"checkpoints"`
	NextBefore  *string           `json:"next_before"`
}

// ListCheckpointsOptions narrows a list: NS nil = every namespace; Filter
// = metadata values each checkpoint must hold.
type ListCheckpointsOptions struct {
	NS     *string
	Before string
	Limit  int
	Filter map[string]any
}
