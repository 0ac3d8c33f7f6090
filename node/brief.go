package node

import (
	"context"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/brief"
	"github.com/memmesh/memmesh/model"
)

// Context returns the brief of a namespace within the budget (see
// brief.Maker.Brief): what an agent starting work in it should know, or,
// with a query, the memories that match it.
func (n *Node) Context(ctx context.Context, req api.ContextRequest) (api.Brief, error) {
	ns, err := NormalizeNamespace(req.Namespace)
	if err != nil {
		return api.Brief{}, err
	}
	return n.briefs.Brief(ctx, ns, req)
}

// briefHost is the node as the brief sees it.
type briefHost struct{ *Node }

var _ brief.Host = briefHost{}

func (h briefHost) Memory(id string) (model.Memory, error) { return h.load(id) }
func (h briefHost) ShortID(id string) string               { return h.shortID(id) }
func (h briefHost) Reads(id string) int                    { return h.life.readsOf(id) }
func (h briefHost) StaleDays(ns string) int                { return int(h.namespaceSettings(ns).StaleDays) }
func (h briefHost) Terms(text string) []string             { return h.index.Terms(text) }
func (briefHost) CheckQuery(text string) error             { return CheckQuery(text) }
