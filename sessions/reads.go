package sessions

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/agentsidecar/agentsidecar/redisstore"
	"github.com/agentsidecar/agentsidecar/sidecar"
)

// Reads are bounded whatever a session holds: a list answer is one script
// (session_read.lua) reading at most n elements a page at a time and
// stopping at SIDECAR_MAX_ANSWER_BYTES (fewer elements and the header
// Sidecar-Truncated: true, never a silent cut), so it is atomic and its work
// bounded; a search reads pages of at most ReadPage elements and about
// PageBytes, newest first, and examines at most SearchMaxExamined entries;
// at most ConcurrentReads list answers are built at once.
const (
	// ReadPage is the most elements one LRANGE of a read asks for; fewer
	// when the elements read so far are big (pageSize), so one page holds
	// about PageBytes.
	ReadPage = 64
	// PageBytes is what one LRANGE aims to bring back at most.
	PageBytes = 1 << 20
	// ScriptPage is the most elements per LRANGE inside the read script
	// (fewer for big elements: about 1 MiB per LRANGE).
	ScriptPage = 64
	// MaxListElements bounds a whole-list answer (the context list, its
	// oldest elements): more is a cut, as the byte cap is. As many as the
	// longest last_n, so one read script stays as short.
	MaxListElements = MaxLastN
	// SearchMaxExamined bounds the entries one search reads, newest first.
	SearchMaxExamined = 2000
	// ConcurrentReads bounds the list answers being built at once; more
	// wait their turn (within the request's deadline).
	ConcurrentReads = 4
)

// pageSize is how many elements the next LRANGE asks for: as many as fit in
// PageBytes (and in the budget left) at the average size read so far, 4 to
// start with, at least 1 and at most ReadPage and want.
func pageSize(read, readBytes, budget, want int) int {
	n := 4
	if read > 0 {
		avg := max(1, readBytes/read)
		n = min(PageBytes, max(budget, avg)) / avg
	}
	return max(1, min(n, ReadPage, want))
}

// page is a bounded read of a list: elements in list order, whether the cap
// cut it, and whether more elements remain past it in the read direction.
type page struct {
	elems     []string
	truncated bool
}

// readLast reads the newest n elements of key (oldest first), stopping
// before the answer would pass maxBytes: one script (session_read.lua),
// so the answer is the list as it was at one moment, and bounded work
// whatever the list holds.
func (s *Store) readLast(ctx context.Context, key string, n, maxBytes int) (page, error) {
	return s.read(ctx, key, "last", n, maxBytes)
}

// readAll reads key from its oldest element, at most MaxListElements,
// stopping before the answer would pass maxBytes (one script).
func (s *Store) readAll(ctx context.Context, key string, maxBytes int) (page, error) {
	return s.read(ctx, key, "first", MaxListElements, maxBytes)
}

func (s *Store) read(ctx context.Context, key, from string, n, maxBytes int) (page, error) {
	client, err := s.Conn().Client()
	if err != nil {
		return page{}, err
	}
	vals, err := luaScripts.Read.Exec(ctx, client, []string{key},
		[]string{strconv.Itoa(n), strconv.Itoa(maxBytes), from, strconv.Itoa(ScriptPage)}).ToArray()
	if err != nil {
		return page{}, redisstore.Wrap(luaScripts.Read.Name, err)
	}
	if len(vals) == 0 {
		return page{}, fmt.Errorf("%s: empty reply", luaScripts.Read.Name)
	}
	cut, _ := vals[0].AsInt64()
	p := page{truncated: cut == 1, elems: make([]string, 0, len(vals)-1)}
	for _, v := range vals[1:] {
		e, err := v.ToString()
		if err != nil {
			return page{}, redisstore.Wrap(luaScripts.Read.Name, err)
		}
		p.elems = append(p.elems, e)
	}
	return p, nil
}

// searchNewest reads entries newest first, a page at a time, and keeps those
// match accepts until it has limit of them, has examined SearchMaxExamined
// entries, or the answer would pass maxBytes. examined tells how many it
// read.
func (s *Store) searchNewest(ctx context.Context, key string, limit, maxBytes int, match func(string) bool) (p page, examined int, err error) {
	client, err := s.Conn().Client()
	if err != nil {
		return page{}, 0, err
	}
	// Pages are taken at positions counted from the length read first, so
	// entries appended meanwhile shift nothing; a search beside writes may
	// miss what they add (it reads the list as it was, page by page).
	llen, err := client.Do(ctx, client.B().Llen().Key(key).Build()).AsInt64()
	if err != nil {
		return page{}, 0, redisstore.Wrap("llen", err)
	}
	seen := map[string]bool{}
	size, readBytes := 2, 0
	for examined < SearchMaxExamined && len(p.elems) < limit && int64(examined) < llen {
		if err := ctx.Err(); err != nil {
			return page{}, examined, err
		}
		want := pageSize(examined, readBytes, PageBytes, SearchMaxExamined-examined)
		stop := llen - int64(examined) - 1
		start := max(0, stop-int64(want)+1)
		vals, err := client.Do(ctx, client.B().Lrange().Key(key).Start(start).Stop(stop).Build()).AsStrSlice()
		if err != nil {
			return page{}, examined, redisstore.Wrap("lrange", err)
		}
		for i := len(vals) - 1; i >= 0 && len(p.elems) < limit; i-- {
			examined++
			readBytes += len(vals[i])
			if seen[vals[i]] || !match(vals[i]) {
				continue // a left trim or delete meanwhile may show an element twice
			}
			seen[vals[i]] = true
			size += len(vals[i]) + 1
			if size > maxBytes {
				p.truncated = true
				return p, examined, nil
			}
			p.elems = append(p.elems, vals[i])
		}
		if len(vals) < want {
			break
		}
	}
	return p, examined, nil
}

// acquireRead takes one of the ConcurrentReads slots, or gives up with the
// request's deadline.
func (m *Module) acquireRead(ctx context.Context) (release func(), err error) {
	select {
	case m.reads <- struct{}{}:
		return func() { <-m.reads }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a read slot: %w", ctx.Err())
	}
}

// writePage answers a bounded read as one JSON array (strict for clients),
// with Sidecar-Truncated: true when the byte cap cut it.
func (m *Module) writePage(w http.ResponseWriter, p page) {
	sidecar.MarkTruncated(w, p.truncated)
	m.writeStoredList(w, p.elems)
}

// pageOf writes the answer of a bounded read, holding a read slot while it
// is built; read gets the answer's byte cap: SIDECAR_MAX_ANSWER_BYTES, or
// less when the host's in-flight byte budget is smaller
// (sidecar.ReserveAnswer).
func (m *Module) pageOf(w http.ResponseWriter, r *http.Request, read func(ctx context.Context, maxBytes int) (page, error)) error {
	release, err := m.acquireRead(r.Context())
	if err != nil {
		return err
	}
	defer release()
	maxBytes, done, err := sidecar.ReserveAnswer(r.Context(), m.maxAnswer)
	if err != nil {
		return err
	}
	p, err := read(r.Context(), maxBytes)
	if err != nil {
		done(0)
		return err
	}
	size := 0
	for _, e := range p.elems {
		size += len(e) + 1
	}
	done(size)
	m.writePage(w, p)
	return nil
}
