package events

import (
	"strconv"
	"strings"
)

// ID is a Redis stream id, "<ms>-<seq>": the SSE id of an event.
type ID struct{ MS, Seq uint64 }

// ParseID reads "<ms>-<seq>" or "<ms>" (seq 0).
func ParseID(s string) (ID, bool) {
	if s == "" || len(s) > 41 {
		return ID{}, false
	}
	ms, seq, dash := strings.Cut(s, "-")
	m, err := strconv.ParseUint(ms, 10, 64)
	if err != nil {
		return ID{}, false
	}
	if !dash {
		return ID{MS: m}, true
	}
	q, err := strconv.ParseUint(seq, 10, 64)
	if err != nil {
		return ID{}, false
	}
	return ID{MS: m, Seq: q}, true
}

// String is the id as Redis writes it.
func (i ID) String() string {
	return strconv.FormatUint(i.MS, 10) + "-" + strconv.FormatUint(i.Seq, 10)
}

// Less reports whether i comes before j.
func (i ID) Less(j ID) bool {
	return i.MS < j.MS || (i.MS == j.MS && i.Seq < j.Seq)
}
