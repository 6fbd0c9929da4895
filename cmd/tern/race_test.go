//go:build race

package main

// raceEnabled: the race detector slows the pure-Go SQLite engine tens of
// times, so wall-clock bounds mean nothing.
const raceEnabled = true
