package client

import (
	"net/http"

	"github.com/agentsidecar/agentsidecar/client"
)

// Aliases of the client package's types.
type (
	// Client is client.Client.
	Client = client.Client
	// Option is client.Option.
	Option = client.Option
	// Options is client.LeaseOptions.
	Options = client.LeaseOptions
	// Lease is client.Lease.
	Lease = client.Lease
	// APIError is client.Error.
	APIError = client.Error
)

// Errors, matched with errors.Is: the client package's.
var (
	ErrHeld     = client.ErrHeld
	ErrLost     = client.ErrLost
	ErrNotHeld  = client.ErrNotHeld
	ErrNotOwner = client.ErrNotOwner
	ErrReleased = client.ErrReleased
)

// New is client.New.
func New(baseURL string, opts ...Option) *Client { return client.New(baseURL, opts...) }

// WithHTTPClient is client.WithHTTPClient.
func WithHTTPClient(hc *http.Client) Option { return client.WithHTTPClient(hc) }

// WithBearerToken is client.WithBearerToken.
func WithBearerToken(token string) Option { return client.WithBearerToken(token) }
