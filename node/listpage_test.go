package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/memmesh/memmesh/api"
)

// TestListDeviceFilter: list and search keep the memories a device wrote,
// in their provenance or in any revision, the device named by its id, a
// unique prefix in any case; an unknown or ambiguous one is refused.
func TestListDeviceFilter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	// Two other machines whose ids share a prefix, through an import of
	// what each wrote.
	others := map[string][]string{}
	for i, dev := range []string{"KQ7AAAAOTHERDEVICE", "KQ7BBBBOTHERDEVICE"} {
		apart := testNode(t, "")
		for j := range 2 {
			remember(t, apart, api.RememberRequest{Namespace: "ops", Content: fmt.Sprintf("Runbook step %d of machine %d: restart the queue", j, i)})
		}
		if _, err := n.Import(ctx, bytes.NewReader(bytes.ReplaceAll(exportOf(t, apart), []byte(apart.DeviceID()), []byte(dev)))); err != nil {
			t.Fatal(err)
		}
		ms, err := n.List(ctx, api.ListRequest{Namespace: "ops"})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if m.Provenance.Device == dev {
				others[dev] = append(others[dev], m.ID)
			}
		}
	}
	mine := remember(t, n, api.RememberRequest{Namespace: "ops", Content: "Page the on-call before restarting the queue"}).ID
	// This machine revises one of another's memories.
	edited := others["KQ7AAAAOTHERDEVICE"][0]
	text := "Runbook: drain the queue, then restart it"
	if _, err := n.Update(ctx, edited, api.UpdateRequest{Content: &text}); err != nil {
		t.Fatal(err)
	}
	listed := func(device string) ([]string, error) {
		ms, err := n.List(ctx, api.ListRequest{Device: device})
		var ids []string
		for _, m := range ms {
			ids = append(ids, m.ID)
		}
		slices.Sort(ids)
		return ids, err
	}
	sorted := func(ids ...string) []string { return slices.Sorted(slices.Values(ids)) }
	for _, tt := range []struct {
		device string
		want   []string
	}{
		{"", sorted(append(append([]string{mine}, others["KQ7AAAAOTHERDEVICE"]...), others["KQ7BBBBOTHERDEVICE"]...)...)},
		{n.DeviceID(), sorted(mine, "m-"+edited[2:])},
		{n.DeviceID()[:5], sorted(mine, "m-"+edited[2:])},
		{"KQ7AAAAOTHERDEVICE", sorted(others["KQ7AAAAOTHERDEVICE"]...)},
		{"kq7b", sorted(others["KQ7BBBBOTHERDEVICE"]...)},
	} {
		got, err := listed(tt.device)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("device %q lists %v (%v), want %v", tt.device, got, err, tt.want)
		}
	}
	for device, want := range map[string]error{"KQ7": api.ErrAmbiguous, "ZZZZ": api.ErrNotFound, string(make([]byte, 300)): api.ErrInvalid} {
		if _, err := listed(device); !errors.Is(err, want) {
			t.Errorf("device %.20q: %v, want %v", device, err, want)
		}
	}
	res, err := n.Search(ctx, api.SearchRequest{Query: "restart queue", Device: "kq7a"})
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, h := range res.Results {
		found = append(found, h.ID)
	}
	if want := sorted(others["KQ7AAAAOTHERDEVICE"]...); !slices.Equal(sorted(found...), want) {
		t.Errorf("search of device kq7a found %v, want %v", found, want)
	}
}

// TestListPagesThroughOneMillisecond: memories updated in the same
// millisecond are listed once each across pages, in the list's order;
// a cursor that is no cursor is refused.
func TestListPagesThroughOneMillisecond(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n := testNode(t, "")
	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var want []string
	for i := range 23 {
		want = append(want, remember(t, n, api.RememberRequest{Content: fmt.Sprintf("Burst note %d", i), At: at}).ID)
	}
	newest := remember(t, n, api.RememberRequest{Content: "After the burst", At: at.Add(time.Millisecond)}).ID
	for _, limit := range []int{1, 5, 10, 23, 24} {
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			page, err := n.ListPage(ctx, api.ListRequest{Limit: limit, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range page.Memories {
				got = append(got, m.ID)
			}
			if cursor = page.Next; cursor == "" || pages > 30 {
				break
			}
		}
		if len(got) != 24 || got[0] != newest || !sameIDs(got[1:], want) {
			t.Errorf("limit %d: pages listed %d memories %v, want the newest then the 23 of the burst once each", limit, len(got), got)
		}
		// Pages keep the order of one list.
		all, err := n.List(ctx, api.ListRequest{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, m := range all {
			order = append(order, m.ID)
		}
		if !slices.Equal(got, order) {
			t.Errorf("limit %d: pages in the order %v, the list in %v", limit, got, order)
		}
	}
	for _, bad := range []string{"nope", "bm90LWEtY3Vyc29y", string(make([]byte, 200))} {
		if _, err := n.ListPage(ctx, api.ListRequest{Cursor: bad}); !errors.Is(err, api.ErrInvalid) {
			t.Errorf("cursor %.20q: %v, want invalid", bad, err)
		}
	}
}

// sameIDs reports whether a and b hold the same ids, each once.
func sameIDs(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))) && len(slices.Compact(slices.Sorted(slices.Values(a)))) == len(a)
}
