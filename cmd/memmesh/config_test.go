package main

import (
	"testing"
	"time"

	"github.com/memmesh/memmesh/node"
)

func TestMinFreeSpace(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{in: "", want: 0},
		{in: "512MiB", want: 512 << 20},
		{in: "1 GiB", want: 1 << 30},
		{in: "2gb", want: 2e9},
		{in: "300MB", want: 300e6},
		{in: "64KiB", want: 64 << 10},
		{in: "1000000", want: 1e6},
		{in: "0MiB", wantErr: true},
		{in: "-5MiB", wantErr: true},
		{in: "12 parsecs", wantErr: true},
		{in: "MiB", wantErr: true},
		{in: "1.5GiB", wantErr: true},
		{in: "99999999999GiB", wantErr: true},
	} {
		cfg := defaultConfig()
		cfg.MinFreeSpace = tc.in
		got, err := cfg.minFree()
		if tc.wantErr {
			if err == nil || cfg.validate() == nil {
				t.Errorf("min_free_space %q: got %d, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("min_free_space %q: got %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestMeshTuning(t *testing.T) {
	for _, tc := range []struct {
		probe   string
		mult    int
		wantErr bool
	}{
		{},
		{probe: "500ms", mult: 3},
		{probe: "2s", mult: 100},
		{probe: "10ms", wantErr: true},
		{probe: "2m", wantErr: true},
		{probe: "fast", wantErr: true},
		{mult: -1, wantErr: true},
		{mult: 101, wantErr: true},
	} {
		cfg := defaultConfig()
		cfg.Mesh = MeshTuning{ProbeInterval: tc.probe, SuspicionMult: tc.mult}
		if err := cfg.validate(); (err != nil) != tc.wantErr {
			t.Errorf("mesh.probe_interval %q, mesh.suspicion_mult %d: validate = %v, want an error: %v", tc.probe, tc.mult, err, tc.wantErr)
		}
	}
}

func TestSymbolsConfig(t *testing.T) {
	for _, tc := range []struct {
		in       SymbolsConfig
		interval time.Duration
		size     int64
		wantErr  bool
	}{
		{in: SymbolsConfig{}, interval: node.DefaultSymbolsInterval},
		{in: SymbolsConfig{Off: true}, interval: 0},
		{in: SymbolsConfig{Interval: "1h", MaxFileSize: "256KiB", MaxFiles: 10}, interval: time.Hour, size: 256 << 10},
		{in: SymbolsConfig{Interval: "10s"}, wantErr: true},
		{in: SymbolsConfig{Interval: "often"}, wantErr: true},
		{in: SymbolsConfig{MaxFileSize: "1GiB"}, wantErr: true},
		{in: SymbolsConfig{MaxFileSize: "12"}, wantErr: true},
		{in: SymbolsConfig{MaxSymbols: -1}, wantErr: true},
	} {
		cfg := defaultConfig()
		cfg.Symbols = tc.in
		got, err := cfg.symbols()
		if tc.wantErr {
			if err == nil || cfg.validate() == nil {
				t.Errorf("%+v: got %+v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got.Interval != tc.interval || got.Limits.FileSize != tc.size || got.Limits.Files != tc.in.MaxFiles {
			t.Errorf("%+v: got %+v, %v; want interval %v, file size %d", tc.in, got, err, tc.interval, tc.size)
		}
	}
}

func TestBridgeInterval(t *testing.T) {
	for _, tc := range []struct {
		cfg     BridgeConfig
		want    time.Duration
		wantErr bool
	}{
		{cfg: BridgeConfig{}, want: -1},
		{cfg: BridgeConfig{Interval: "10s"}, want: -1}, // off: the interval is not used
		{cfg: BridgeConfig{ClaudeCode: true}, want: time.Minute},
		{cfg: BridgeConfig{ClaudeCode: true, Interval: "30s"}, want: 30 * time.Second},
		{cfg: BridgeConfig{ClaudeCode: true, Interval: "100ms"}, wantErr: true},
		{cfg: BridgeConfig{ClaudeCode: true, Interval: "often"}, wantErr: true},
	} {
		cfg := defaultConfig()
		cfg.Bridge = tc.cfg
		got, err := cfg.bridgeInterval()
		if (err != nil) != tc.wantErr || (cfg.validate() != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
			t.Errorf("%+v: %s, %v; want %s, an error: %v", tc.cfg, got, err, tc.want, tc.wantErr)
		}
	}
}
