// Package client is the Go client of the sidecar's /v1 API: session memory
// in Cognee's shapes (Q&A entries, feedback, search, traces, context), TTLs,
// usage and the session lifecycle, and locks, with a Lease that refreshes a
// lock in the background.
//
// Every operation of openapi/openapi.json is one method, named after its
// operationId (appendEntry → AppendEntry), taking a context first:
//
//	c := client.New("http://127.0.0.1:7480", client.WithBearerToken(os.Getenv("SIDECAR_API_TOKEN")))
//	res, err := c.AppendEntry(ctx, "alice", "chat-1", client.AppendEntryRequest{
//		QAID: "q1", Question: "Where is the dog?", Answer: "In the garden",
//	})
//	// res.Created is false when the session already held q1 (a safe retry).
//	entries, err := c.ListEntries(ctx, "alice", "chat-1", 10)
//
// A non-2xx answer is an *Error with the HTTP status, the envelope's code
// and message, and Retry-After; IsNotFound, IsConflict and IsUnavailable
// test for the usual cases, and errors.Is matches the lock errors (ErrHeld,
// ErrLost, ErrNotHeld, ErrNotOwner) and ErrSessionEnded. Nothing is retried
// for you.
//
// GetSessionEvents and GetUserEvents stream live events as an iterator that
// reconnects by itself with Last-Event-ID.
//
// Acquire takes a lock and returns a Lease that refreshes it until Release
// and reports its loss on Done, Err and Context:
//
//	lease, err := c.Acquire(ctx, "graph-writes", client.LeaseOptions{Wait: time.Minute})
//	if err != nil { ... }                  // errors.Is(err, client.ErrHeld): not acquired within Wait
//	defer lease.Release(context.Background())
//	ctx, cancel := lease.Context(ctx)      // cancelled if the lease is lost
//	defer cancel()
//	write(ctx, lease.Fence)                // pass the fencing token to the resource
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// DefaultUserAgent is the User-Agent sent unless WithUserAgent sets another.
const DefaultUserAgent = "agentsidecar-go-client"

// Client calls one sidecar. It is safe for concurrent use.
type Client struct {
	base      string
	http      *http.Client
	token     string
	userAgent string
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient uses hc (for timeouts, transports, instrumentation)
// instead of a client with http.DefaultTransport that follows no
// redirects; nil keeps that one.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.http = hc
		}
	}
}

// WithBearerToken sends "Authorization: Bearer token" with every call: the
// sidecar's SIDECAR_API_TOKEN. An empty token sends nothing.
func WithBearerToken(token string) Option { return func(c *Client) { c.token = token } }

// WithUserAgent sets the User-Agent header (DefaultUserAgent otherwise).
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// defaultHTTP is http.DefaultClient's transport, without following
// redirects: the API never redirects, and following one (say, a proxy's)
// would send the call somewhere else.
var defaultHTTP = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// New returns a client of the sidecar at baseURL, e.g.
// "http://127.0.0.1:7480" (SIDECAR_LISTEN_ADDR).
func New(baseURL string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), http: defaultHTTP, userAgent: DefaultUserAgent}
	for _, o := range opts {
		o(c)
	}
	return c
}

// ErrBadID is returned, before anything is sent, for a user, session,
// entry, context or lock id that no URL path can carry: "", "." or ".."
// (HTTP path cleaning would turn the call into another one). The sidecar
// checks everything else about ids (400 invalid_id).
var ErrBadID = errors.New(`client: id "", "." or ".." cannot be sent in a URL path`)

// request is one API call.
type request struct {
	method string
	path   string     // from apiPath
	query  url.Values // may be nil
	body   any        // nil: no body
	header http.Header
}

// apiPath joins "/v1" and the segments, escaping each; a segment "", "."
// or ".." is ErrBadID.
func apiPath(segments ...string) (string, error) {
	var b strings.Builder
	b.WriteString("/v1")
	for _, s := range segments {
		if s == "" || s == "." || s == ".." {
			return "", fmt.Errorf("%w: %q", ErrBadID, s)
		}
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String(), nil
}

// sessionPath is /v1/users/{user}/sessions/{session} plus more segments.
func sessionPath(user, session string, more ...string) (string, error) {
	return apiPath(append([]string{"users", user, "sessions", session}, more...)...)
}

// do sends r and decodes a 2xx answer's body into out (when out is not nil
// and there is a body). It returns the status of a 2xx answer; any other
// answer is an *Error.
func (c *Client) do(ctx context.Context, r request, out any) (int, error) {
	var body io.Reader
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return 0, fmt.Errorf("client: encode %s %s: %w", r.method, r.path, err)
		}
		body = bytes.NewReader(b)
	}
	u := c.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return 0, err
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	c.identify(req)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("client: read the answer to %s %s: %w", r.method, r.path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return 0, errorFrom(resp.StatusCode, resp.Header, data)
	}
	if out != nil && resp.StatusCode != http.StatusNoContent {
		if err := json.Unmarshal(data, out); err != nil {
			return 0, fmt.Errorf("client: decode the answer to %s %s: %w", r.method, r.path, err)
		}
	}
	return resp.StatusCode, nil
}

// identify sets req's User-Agent (WithUserAgent) and its bearer token
// (WithBearerToken), when the client has them.
func (c *Client) identify(req *http.Request) {
	if c.userAgent != "" {
		req.Header.Set("User-Agent", c.userAgent)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
}

// call sends r, unless pathErr (from building r.path) is set, and returns
// the 2xx answer decoded as a T, and its status.
func call[T any](ctx context.Context, c *Client, r request, pathErr error) (*T, int, error) {
	if pathErr != nil {
		return nil, 0, pathErr
	}
	var out T
	status, err := c.do(ctx, r, &out)
	if err != nil {
		return nil, 0, err
	}
	return &out, status, nil
}

// answer is call for a request with only a method, path and body.
func answer[T any](ctx context.Context, c *Client, method, path string, body any, pathErr error) (*T, error) {
	out, _, err := call[T](ctx, c, request{method: method, path: path, body: body}, pathErr)
	return out, err
}

// list GETs a JSON array (empty, never nil, on success).
func list[T any](ctx context.Context, c *Client, path string, query url.Values, pathErr error) ([]T, error) {
	out, _, err := call[[]T](ctx, c, request{method: http.MethodGet, path: path, query: query}, pathErr)
	if err != nil {
		return nil, err
	}
	if *out == nil {
		return []T{}, nil
	}
	return *out, nil
}

// delete sends a DELETE answered 204.
func (c *Client) delete(ctx context.Context, path string, pathErr error) error {
	_, _, err := call[struct{}](ctx, c, request{method: http.MethodDelete, path: path}, pathErr)
	return err
}
