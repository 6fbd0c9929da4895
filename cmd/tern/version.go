package main

import "runtime/debug"

// version reports the module version and VCS revision baked in by go build.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "tern (unknown build)"
	}
	v := "tern " + info.Main.Version
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			v += " " + s.Value
		}
	}
	return v + " " + info.GoVersion
}
