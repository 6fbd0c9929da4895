package amf

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/ue_transitions.golden from the table")

// allStates is every combination of the three state components.
func allStates() []ueState {
	var out []ueState
	for rm := range numRMStates {
		for cm := range numCMStates {
			for p := range numProcedures {
				out = append(out, ueState{rm, cm, p})
			}
		}
	}
	return out
}

// TestTransitionTableGolden walks every (state, event) pair: the allowed
// ones, with where they lead, must be exactly those of
// testdata/ue_transitions.golden, which a reviewer reads as the state
// machine; every other pair must be refused and leave the state alone.
func TestTransitionTableGolden(t *testing.T) {
	got := describeTransitions()
	path := filepath.Join("testdata", "ue_transitions.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestTransitionTableGolden -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("transition table changed; if intended, rerun with -update and review the diff.\ngot:\n%s", got)
	}
	allowed := 0
	for _, s := range allStates() {
		for ev := range numEvents {
			n, ok := next(s, ev)
			if !ok {
				if n != s {
					t.Errorf("refused %s in %s changed the state to %s", ev, s, n)
				}
				continue
			}
			allowed++
		}
	}
	if allowed == 0 {
		t.Fatal("no transition allowed at all")
	}
}

// TestTransitionInvariants checks the rules of TS 23.501 §5.3 and TS
// 23.502 §4.2, §4.9 that every row of the table must respect, over every
// (state, event) pair.
func TestTransitionInvariants(t *testing.T) {
	for _, s := range allStates() {
		for ev := range numEvents {
			n, ok := next(s, ev)
			if !ok {
				continue
			}
			fail := func(why string) { t.Errorf("%s --%s--> %s: %s", s, ev, n, why) }
			// A deleted context does nothing but lose its connection.
			if s.rm == rmGone && ev != evDisconnect {
				fail("a deleted context accepts no event but the end of its connection")
			}
			// Only evRemove deletes, only from RM-DEREGISTERED.
			if n.rm == rmGone && s.rm != rmGone && (ev != evRemove || s.rm != rmDeregistered) {
				fail("a context is deleted only by remove, after deregistration")
			}
			// RM-REGISTERED is entered only by Registration Complete.
			if n.rm == rmRegistered && s.rm != rmRegistered && ev != evRegistrationComplete {
				fail("RM-REGISTERED entered without Registration Complete")
			}
			// The CM state changes only by connect / disconnect.
			if n.cm != s.cm && ev != evConnect && ev != evDisconnect {
				fail("CM state changed by an event that is not a connection change")
			}
			// Paging is for a registered UE in CM-IDLE (TS 23.502 §4.2.3.3).
			if n.proc == procPaging && s.proc != procPaging && (s.rm != rmRegistered || s.cm != cmIdle) {
				fail("paging started for a UE that is not registered and idle")
			}
			// Handover, service request and network deregistration need a
			// registered UE; handover and deregistration a connected one.
			switch n.proc {
			case procHandoverPreparation, procHandoverExecution, procNetworkDeregistration, procServiceRequest:
				if n.rm != rmRegistered {
					fail(n.proc.String() + " for a UE that is not registered")
				}
				if n.cm != cmConnected {
					fail(n.proc.String() + " without an N2 connection")
				}
			case procRegistration:
				if n.cm != cmConnected {
					fail("registration without an N2 connection")
				}
			}
			// Handover execution only follows preparation.
			if n.proc == procHandoverExecution && s.proc != procHandoverExecution && s.proc != procHandoverPreparation {
				fail("handover execution without preparation")
			}
			// Losing the connection ends every procedure that needs it.
			if ev == evDisconnect && n.proc != procNone && n.proc != procPaging && s.rm != rmGone {
				fail("a procedure survived the loss of the connection")
			}
		}
	}
}

// TestEveryProcedureReachableAndEnds: from a fresh context every procedure
// can be entered, and from every reachable state the UE can get back to no
// procedure, so no state is a trap.
func TestEveryProcedureReachableAndEnds(t *testing.T) {
	start := ueState{}
	seen := map[ueState]bool{start: true}
	queue := []ueState{start}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for ev := range numEvents {
			if n, ok := next(s, ev); ok && !seen[n] {
				seen[n] = true
				queue = append(queue, n)
			}
		}
	}
	for p := range numProcedures {
		found := false
		for s := range seen {
			if s.proc == p {
				found = true
			}
		}
		if !found {
			t.Errorf("procedure %s cannot be reached from a fresh context", p)
		}
	}
	for s := range seen {
		if s.rm == rmGone {
			continue
		}
		if !canReach(s, func(x ueState) bool { return x.proc == procNone }) {
			t.Errorf("from %s no sequence of events ends the procedure", s)
		}
		if !canReach(s, func(x ueState) bool { return x.rm == rmGone }) {
			t.Errorf("from %s the context can never be deleted", s)
		}
	}
}

func canReach(from ueState, goal func(ueState) bool) bool {
	seen := map[ueState]bool{from: true}
	queue := []ueState{from}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if goal(s) {
			return true
		}
		for ev := range numEvents {
			if n, ok := next(s, ev); ok && !seen[n] {
				seen[n] = true
				queue = append(queue, n)
			}
		}
	}
	return false
}
