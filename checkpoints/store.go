package checkpoints

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sessionstore"
)

// Store is the module's reads and writes over the shared session runner,
// each one script (checkpoints_*.lua).
type Store struct {
	*sessionstore.Store
	cfg Config
}

func itoa(n int) string { return strconv.Itoa(n) }

// record is a checkpoint as its hash field keeps it.
type record struct {
	Parent *string `json:"parent"`
	Type   string  `json:"type"`
	Data   string  `json:"data"`
}

// written is a write as its hash field keeps it (after its task_path).
type written struct {
	Channel string `json:"channel"`
	Type    string `json:"type"`
	Data    string `json:"data"`
}

// Put stores checkpoint p (checked) in one script.
func (s *Store) Put(ctx context.Context, user, session string, p *putBody) error {
	rec, err := json.Marshal(record{Parent: p.ParentCheckpointID, Type: p.Checkpoint.Type, Data: p.Checkpoint.Data})
	if err != nil {
		return err
	}
	var versions strings.Builder
	for ch, v := range p.ChannelVersions {
		if versions.Len() > 0 {
			versions.WriteByte(0)
		}
		versions.WriteString(ch)
		versions.WriteByte(0)
		versions.WriteString(v)
	}
	args := make([]string, 0, 7+2*len(p.ChannelValues))
	args = append(args, p.CheckpointNS, p.CheckpointID, string(rec), string(p.Metadata), versions.String(),
		itoa(s.cfg.MaxPerThread), itoa(s.cfg.maxValues()))
	for _, v := range p.ChannelValues {
		b, err := json.Marshal(Blob{Type: v.Type, Data: v.Data})
		if err != nil {
			return err
		}
		args = append(args, v.Channel+"\x00"+v.Version, string(b))
	}
	r, err := s.Run(ctx, luaScripts.Put, user, session, args...)
	if err != nil {
		return err
	}
	started, err := r.Flag(0)
	if err != nil {
		return redisstore.Wrap(luaScripts.Put.Name, err)
	}
	if started {
		sessionstore.CountStarted()
	}
	return nil
}

// PutWrites stores a task's writes; it answers how many were stored (a
// normal write already stored is kept, not counted).
func (s *Store) PutWrites(ctx context.Context, user, session string, b *writesBody) (int, error) {
	args := make([]string, 0, 6+2*len(b.Writes))
	args = append(args, b.CheckpointNS, b.CheckpointID, b.TaskID, b.TaskPath, itoa(MaxWrites), itoa(s.cfg.MaxPerThread))
	for _, w := range b.Writes {
		v, err := json.Marshal(written{Channel: w.Channel, Type: w.Type, Data: w.Data})
		if err != nil {
			return 0, err
		}
		args = append(args, itoa(w.Idx), string(v))
	}
	r, err := s.Run(ctx, luaScripts.Writes, user, session, args...)
	if err != nil {
		return 0, err
	}
	n, err1 := r.Int(0)
	started, err2 := r.Flag(1)
	if err := errors.Join(err1, err2); err != nil {
		return 0, redisstore.Wrap(luaScripts.Writes.Name, err)
	}
	if started {
		sessionstore.CountStarted()
	}
	return int(n), nil
}

// Read is checkpoint id of namespace ns ("" the newest) with its channel
// values and writes, of at most most bytes (409 checkpoint_too_large
// past it); redisstore.ErrNotFound when there is none.
func (s *Store) Read(ctx context.Context, user, session, ns, id string, most int) (Tuple, error) {
	r, err := s.Run(ctx, luaScripts.Read, user, session, ns, id, itoa(most), itoa(MaxWrites))
	if err != nil {
		return Tuple{}, err
	}
	t, err := tupleOf(ns, r.Values)
	if err != nil {
		return Tuple{}, redisstore.Wrap(luaScripts.Read.Name, err)
	}
	return t, nil
}

// tupleOf decodes checkpoints_read's answer.
func tupleOf(ns string, v []rueidis.RedisMessage) (Tuple, error) {
	if len(v) != 5 {
		return Tuple{}, fmt.Errorf("answer has %d values, want 5", len(v))
	}
	id, err1 := v[0].ToString()
	recRaw, err2 := v[1].ToString()
	meta, err3 := v[2].ToString()
	vals, err4 := v[3].ToArray()
	ws, err5 := v[4].ToArray()
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return Tuple{}, err
	}
	var rec record
	if err := json.Unmarshal([]byte(recRaw), &rec); err != nil {
		return Tuple{}, fmt.Errorf("checkpoint %s: %w", id, err)
	}
	t := Tuple{
		CheckpointNS: ns, CheckpointID: id, ParentCheckpointID: rec.Parent,
		Checkpoint: Blob{Type: rec.Type, Data: rec.Data}, Metadata: json.RawMessage(meta),
		ChannelValues: []ChannelValue{}, PendingWrites: []Write{},
	}
	for i := 0; i+2 < len(vals); i += 3 {
		ch, _ := vals[i].ToString()
		ver, _ := vals[i+1].ToString()
		raw, _ := vals[i+2].ToString()
		if raw == "" {
			continue // a version no put stored a value for: LangGraph's empty channel
		}
		var b Blob
		if err := json.Unmarshal([]byte(raw), &b); err != nil {
			return Tuple{}, fmt.Errorf("channel %s: %w", ch, err)
		}
		t.ChannelValues = append(t.ChannelValues, ChannelValue{Channel: ch, Version: ver, Type: b.Type, Data: b.Data})
	}
	for i := 0; i+3 < len(ws); i += 4 {
		path, _ := ws[i].ToString()
		task, _ := ws[i+1].ToString()
		idx, _ := ws[i+2].AsInt64()
		raw, _ := ws[i+3].ToString()
		var w written
		if err := json.Unmarshal([]byte(raw), &w); err != nil {
			return Tuple{}, fmt.Errorf("write %s/%d: %w", task, idx, err)
		}
		t.PendingWrites = append(t.PendingWrites, Write{TaskID: task, TaskPath: path, Idx: int(idx), Channel: w.Channel, Type: w.Type, Data: w.Data})
	}
	return t, nil
}

// listQuery is what a list asks.
type listQuery struct {
	NS       string
	ByNS     bool // only namespace NS, else every namespace
	Before   string
	Limit    int
	Filter   map[string]any
	MaxBytes int
}

// candidate is one checkpoint a list page names.
type candidate struct {
	ns, id string
	meta   json.RawMessage
}

// List answers up to q.Limit checkpoints newest id first, matching
// q.Filter, examining at most MaxListScan and holding at most q.MaxBytes;
// NextBefore continues it when more may follow. Each step is one bounded
// script: a page of ids with their metadata, then each match's read.
func (s *Store) List(ctx context.Context, user, session string, q listQuery) (listAnswer, error) {
	out := listAnswer{Checkpoints: []Tuple{}}
	byNS := "0"
	if q.ByNS {
		byNS = "1"
	}
	before, scanned, size := q.Before, 0, 0
	for {
		n := min(MaxListLimit, MaxListScan-scanned)
		if len(q.Filter) == 0 {
			n = min(n, q.Limit-len(out.Checkpoints)) // every candidate is answered
		}
		page, more, err := s.page(ctx, user, session, byNS, q.NS, before, n, q.MaxBytes)
		if err != nil {
			return listAnswer{}, err
		}
		for i, c := range page {
			scanned++
			last := i == len(page)-1
			if matches(c.meta, q.Filter) {
				t, err := s.Read(ctx, user, session, c.ns, c.id, q.MaxBytes-size)
				var ref *redisstore.Refusal
				switch {
				case errors.Is(err, redisstore.ErrNotFound):
					// deleted since the page was read
				case errors.As(err, &ref) && ref.Code == "checkpoint_too_large" && len(out.Checkpoints) > 0:
					next := before
					if i > 0 {
						next = page[i-1].id
					}
					out.NextBefore = &next
					return out, nil
				case err != nil:
					return listAnswer{}, err
				default:
					out.Checkpoints = append(out.Checkpoints, t)
					size += len(t.Checkpoint.Data) + len(t.Metadata)
					for _, v := range t.ChannelValues {
						size += len(v.Data) + len(v.Channel) + len(v.Version) + 64
					}
					for _, w := range t.PendingWrites {
						size += len(w.Data) + len(w.Channel) + len(w.TaskID) + len(w.TaskPath) + 64
					}
				}
			}
			if len(out.Checkpoints) == q.Limit || scanned == MaxListScan {
				if !last || more {
					next := c.id
					out.NextBefore = &next
				}
				return out, nil
			}
		}
		if !more || len(page) == 0 {
			return out, nil
		}
		before = page[len(page)-1].id
	}
}

// page is one checkpoints_list call, its metadata at most maxBytes (the
// first candidate's always).
func (s *Store) page(ctx context.Context, user, session, byNS, ns, before string, n, maxBytes int) ([]candidate, bool, error) {
	r, err := s.Run(ctx, luaScripts.List, user, session, byNS, ns, before, itoa(n), itoa(maxBytes))
	if err != nil {
		return nil, false, err
	}
	if len(r.Values) != 2 {
		return nil, false, redisstore.Wrap(luaScripts.List.Name, fmt.Errorf("answer has %d values, want 2", len(r.Values)))
	}
	arr, err1 := r.Values[0].ToArray()
	more, err2 := r.Values[1].AsInt64()
	if err := errors.Join(err1, err2); err != nil {
		return nil, false, redisstore.Wrap(luaScripts.List.Name, err)
	}
	out := make([]candidate, 0, len(arr)/3)
	for i := 0; i+2 < len(arr); i += 3 {
		ns, _ := arr[i].ToString()
		id, _ := arr[i+1].ToString()
		meta, _ := arr[i+2].ToString()
		out = append(out, candidate{ns: ns, id: id, meta: json.RawMessage(meta)})
	}
	return out, more == 1, nil
}
