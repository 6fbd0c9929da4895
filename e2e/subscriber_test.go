package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/tern5g/tern/config"
	"github.com/tern5g/tern/internal/poll"
	"github.com/tern5g/tern/nf/amf"
	"github.com/tern5g/tern/sim/ue"
	"github.com/tern5g/tern/store"
)

// TestLiveSubscriberChanges: subscribers changed by another process (here a
// second handle on the store's SQLite file, as `tern subscriber` opens it)
// while the core runs take effect without a restart: a new subscriber
// registers at once; a changed one's subscription data reaches the AMF
// (Nudm_SDM_Notification); a deleted one's UE is deregistered by the network
// (Nudm_UECM_DeregistrationNotification, SUBSCRIPTION_WITHDRAWN) and cannot
// register again.
func TestLiveSubscriberChanges(t *testing.T) {
	c := startCore(t, 1, func(cfg *config.Config) { cfg.Store.FollowInterval = 10 * time.Millisecond })
	cli, err := store.Open(c.cfg.Store.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()

	added := store.DefaultSubscribers(50)[49] // imsi-208930000000050, not provisioned
	if err := cli.Put(added); err != nil {
		t.Fatal(err)
	}
	g, err := dialGNB(t, c, 1, plmn)
	if err != nil {
		t.Fatal(err)
	}
	u := registeredUE(t, g, "0000000050") // fails the test if it cannot register

	ctx := context.Background()
	sess, err := u.EstablishSession(ctx, ue.SessionRequest{DNN: "internet"})
	if err != nil {
		t.Fatal(err)
	}
	// The subscribed session AMBR of internet changes: the SMF asks the PCF
	// again and modifies the session, and the UE learns its new AMBR.
	changed := added.Clone()
	changed.UEAMBR = store.AMBR{Uplink: "10 Mbps", Downlink: "20 Mbps"}
	for i := range changed.Slices[0].DNNs {
		if changed.Slices[0].DNNs[i].Name == "internet" {
			changed.Slices[0].DNNs[i].SessionAMBR = store.AMBR{Uplink: "5 Mbps", Downlink: "7 Mbps"}
		}
	}
	if err := cli.Put(changed); err != nil {
		t.Fatal(err)
	}
	if err := poll.Until(ctx, 5*time.Second, time.Millisecond, func() bool {
		s, ok := u.Session(sess.ID)
		return ok && s.AMBR.UL == 5_000_000 && s.AMBR.DL == 7_000_000
	}); err != nil {
		s, _ := u.Session(sess.ID)
		t.Fatalf("session AMBR after the subscription change: %+v (%v)", s.AMBR, err)
	}
	if !u.Registered() {
		t.Fatal("a changed subscription deregistered the UE")
	}

	if err := cli.Delete(added.SUPI); err != nil {
		t.Fatal(err)
	}
	if err := poll.Until(ctx, 5*time.Second, time.Millisecond, func() bool { return !u.Registered() }); err != nil {
		t.Fatalf("UE still registered after its subscriber was deleted: %v", err)
	}
	st := eventually(t, c, func(s amf.Stats) bool { return s.NetworkDeregistrations == 1 && s.RegisteredUEs == 0 })
	if st.NetworkDeregistrations != 1 || st.RegisteredUEs != 0 {
		t.Errorf("AMF %+v", st)
	}
	if err := u.Register(ctx); err == nil {
		t.Error("a deleted subscriber registered again")
	}
}
