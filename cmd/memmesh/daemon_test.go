package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/memmesh/memmesh/api"
	"github.com/memmesh/memmesh/mesh"
	"github.com/memmesh/memmesh/node"
)

func TestOpenNodeWithoutFreePort(t *testing.T) {
	busy, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	ctx := context.Background()
	cfg := node.Config{Home: t.TempDir(), Mesh: &mesh.Config{Listen: busy.LocalAddr().String()}}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	// An address that was asked for must be free.
	if n, err := openNode(ctx, cfg, true, log); err == nil {
		n.Close()
		t.Fatal("openNode on a taken port that was asked for succeeded")
	}
	// The default one need not: the node runs without the mesh.
	n, err := openNode(ctx, cfg, false, log)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if st, err := n.MeshStatus(ctx); err != nil || st.Enabled {
		t.Errorf("mesh status = %+v, %v; want the mesh off", st, err)
	}
	if _, err := n.Peers(ctx); !errors.Is(err, api.ErrNoMesh) {
		t.Errorf("Peers: %v, want ErrNoMesh", err)
	}
	if !strings.Contains(logs.String(), "the mesh is off") {
		t.Errorf("no warning logged:\n%s", logs.String())
	}
}

func TestMeshFlags(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       Config
		args      []string
		want      meshConfig
		wantUsage bool
	}{
		{name: "defaults", want: meshConfig{}},
		{name: "config", cfg: Config{Listen: ":7430", Name: "laptop"},
			want: meshConfig{Config: mesh.Config{Listen: ":7430", Name: "laptop"}, required: true}},
		{name: "flags over config", cfg: Config{Listen: ":7430", Name: "laptop"},
			args: []string{"--listen", "127.0.0.1:7440", "--name", "desk", "--advertise", "10.0.0.5:7440", "--join", "10.0.0.6:7420"},
			want: meshConfig{Config: mesh.Config{Listen: "127.0.0.1:7440", Advertise: "10.0.0.5:7440", Name: "desk", Join: []string{"10.0.0.6:7420"}}, required: true}},
		{name: "failure detection", cfg: Config{Mesh: MeshTuning{ProbeInterval: "250ms", SuspicionMult: 20}},
			want: meshConfig{Config: mesh.Config{ProbeInterval: 250 * time.Millisecond, SuspicionMult: 20}}},
		{name: "no mesh", cfg: Config{Listen: ":7430"}, args: []string{"--no-mesh"}, want: meshConfig{off: true}},
		{name: "no mesh and listen", args: []string{"--no-mesh", "--listen", ":7430"}, wantUsage: true},
		{name: "bad join", args: []string{"--join", "somewhere"}, wantUsage: true},
		{name: "bad listen", args: []string{"--listen", "7420"}, wantUsage: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mesh meshFlags
			cmd := &cobra.Command{}
			mesh.register(cmd)
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := mesh.resolve(cmd, tc.cfg)
			var uerr usageError
			if tc.wantUsage {
				if !errors.As(err, &uerr) {
					t.Fatalf("resolve = %+v, %v; want a usage error", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.off != tc.want.off || got.required != tc.want.required || got.Listen != tc.want.Listen ||
				got.Advertise != tc.want.Advertise || got.Name != tc.want.Name || strings.Join(got.Join, ",") != strings.Join(tc.want.Join, ",") ||
				got.ProbeInterval != tc.want.ProbeInterval || got.SuspicionMult != tc.want.SuspicionMult {
				t.Errorf("resolve = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestConfigMeshKeys(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, configFile), []byte("listen = \":7430\"\nadvertise = \"10.0.0.5:7430\"\nname = \"laptop\"\n"), 0o600)
	t.Setenv("MEMMESH_LISTEN", "")
	t.Setenv("MEMMESH_NAME", "")
	cfg, err := loadConfig(home)
	if err != nil || cfg.Listen != ":7430" || cfg.Advertise != "10.0.0.5:7430" || cfg.Name != "laptop" {
		t.Fatalf("config = %+v, %v", cfg, err)
	}
	t.Setenv("MEMMESH_LISTEN", "127.0.0.1:0")
	t.Setenv("MEMMESH_NAME", "desk")
	if cfg, err = loadConfig(home); err != nil || cfg.Listen != "127.0.0.1:0" || cfg.Name != "desk" {
		t.Fatalf("config with environment = %+v, %v", cfg, err)
	}
	t.Setenv("MEMMESH_LISTEN", "7420")
	if _, err := loadConfig(home); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Fatalf("a listen address without a port: %v", err)
	}
}

func TestConfigHTTPKey(t *testing.T) {
	home := t.TempDir()
	t.Setenv("MEMMESH_HTTP", "")
	resolve := func(args ...string) httpConfig {
		t.Helper()
		cfg, err := loadConfig(home)
		if err != nil {
			t.Fatal(err)
		}
		var flag string
		cmd := &cobra.Command{}
		cmd.Flags().StringVar(&flag, "http", defaultHTTPAddr, "")
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		return resolveHTTP(cmd, flag, cfg)
	}
	if got := resolve(); got != (httpConfig{addr: defaultHTTPAddr}) {
		t.Errorf("no config: %+v, want the default, not required", got)
	}
	os.WriteFile(filepath.Join(home, configFile), []byte("http = \"127.0.0.1:7431\"\n"), 0o600)
	if got := resolve(); got != (httpConfig{addr: "127.0.0.1:7431", required: true}) {
		t.Errorf("config http: %+v", got)
	}
	t.Setenv("MEMMESH_HTTP", "[::1]:7432")
	if got := resolve(); got != (httpConfig{addr: "[::1]:7432", required: true}) {
		t.Errorf("environment over config: %+v", got)
	}
	if got := resolve("--http", "localhost:7433"); got != (httpConfig{addr: "localhost:7433", required: true}) {
		t.Errorf("flag over environment: %+v", got)
	}
	t.Setenv("MEMMESH_HTTP", "")
	os.WriteFile(filepath.Join(home, configFile), []byte("http = \"\"\n"), 0o600)
	if got := resolve(); got.addr != "" {
		t.Errorf(`http = "": %+v, want HTTP off`, got)
	}
	for _, bad := range []string{"0.0.0.0:7421", "192.168.1.5:7421", "7421", "localhost"} {
		os.WriteFile(filepath.Join(home, configFile), []byte(fmt.Sprintf("http = %q\n", bad)), 0o600)
		if _, err := loadConfig(home); err == nil || !strings.Contains(err.Error(), "config: http") {
			t.Errorf("http = %q: %v, want an error naming the key", bad, err)
		}
	}
	t.Setenv("MEMMESH_HTTP", "0.0.0.0:7421")
	os.Remove(filepath.Join(home, configFile))
	if _, err := loadConfig(home); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("MEMMESH_HTTP=0.0.0.0:7421: %v, want a refusal", err)
	}
}
