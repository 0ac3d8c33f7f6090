package web

import (
	"context"
	"net/http"
	"time"
)

// UILogin is the answer to POST /v1/ui/login: a link that logs a browser
// into the dashboard, once, until Expires.
type UILogin struct {
	URL     string    `json:"url"`
	Expires time.Time `json:"expires"`
}

// ServeUILogin serves POST /v1/ui/login with link. The daemon serves it on
// its unix socket only: whoever can reach the socket may log in.
func (a *API) ServeUILogin(link func() (UILogin, error)) {
	a.mux.HandleFunc("POST /v1/ui/login", func(w http.ResponseWriter, r *http.Request) {
		res, err := link()
		a.reply(w, http.StatusOK, res, err)
	})
}

// UILogin asks the daemon for a one-time dashboard login link.
func (c *Client) UILogin(ctx context.Context) (UILogin, error) {
	var l UILogin
	return l, c.do(ctx, http.MethodPost, "/v1/ui/login", nil, &l)
}
