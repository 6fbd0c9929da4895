package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tern5g/tern/internal/freeport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// etcdStore: the log is keys log/<n> (each put's revision is the
// sequence), the checkpoint one key updated by a txn on its mod revision.
type etcdStore struct {
	c    *clientv3.Client
	next atomic.Uint64
}

func openEtcd(endpoints []string) (*etcdStore, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 10 * time.Second})
	if err != nil {
		return nil, err
	}
	// Until the cluster has a leader, requests fail: wait for one.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err = c.Put(ctx, "hello", "")
		cancel()
		if err == nil {
			return &etcdStore{c: c}, nil
		}
		if time.Now().After(deadline) {
			c.Close()
			return nil, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *etcdStore) Append(ctx context.Context, data []byte) (uint64, error) {
	key := fmt.Sprintf("log/%020d", s.next.Add(1))
	r, err := s.c.Put(ctx, key, string(data))
	if err != nil {
		return 0, err
	}
	return uint64(r.Header.Revision), nil
}

func (s *etcdStore) CAS(ctx context.Context, data []byte, rev uint64) (uint64, error) {
	r, err := s.c.Txn(ctx).
		If(clientv3.Compare(clientv3.ModRevision("ckpt"), "=", int64(rev))).
		Then(clientv3.OpPut("ckpt", string(data))).
		Commit()
	if err != nil {
		return 0, err
	}
	if !r.Succeeded {
		return 0, fmt.Errorf("revision %d is not the key's", rev)
	}
	return uint64(r.Header.Revision), nil
}

// Replay reads the log keys whose mod revision is above after, in pages.
func (s *etcdStore) Replay(ctx context.Context, after uint64) (int, error) {
	n := 0
	from := "log/"
	for {
		r, err := s.c.Get(ctx, from, clientv3.WithRange(clientv3.GetPrefixRangeEnd("log/")),
			clientv3.WithMinModRev(int64(after+1)), clientv3.WithLimit(1000))
		if err != nil {
			return n, err
		}
		n += len(r.Kvs)
		if !r.More || len(r.Kvs) == 0 {
			return n, nil
		}
		from = string(r.Kvs[len(r.Kvs)-1].Key) + "\x00"
	}
}

func (s *etcdStore) Close() { s.c.Close() }

type etcdMemberConfig struct {
	Name, Dir, Client, Peer, InitialCluster string
}

func startEtcd(m etcdMemberConfig) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = m.Name
	cfg.Dir = m.Dir
	cfg.LogLevel = "error"
	cu, err := url.Parse(m.Client)
	if err != nil {
		return nil, err
	}
	pu, err := url.Parse(m.Peer)
	if err != nil {
		return nil, err
	}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = m.InitialCluster
	cfg.InitialClusterToken = "enginecmp"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("etcd %s not ready", m.Name)
	}
}

func etcdConfigs(n int) ([]etcdMemberConfig, error) {
	var ms []etcdMemberConfig
	var initial []string
	for i := range n {
		cp, err := freeport.TCP()
		if err != nil {
			return nil, err
		}
		pp, err := freeport.TCP()
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", "enginecmp-etcd-")
		if err != nil {
			return nil, err
		}
		m := etcdMemberConfig{Name: "e" + strconv.Itoa(i), Dir: dir,
			Client: "http://127.0.0.1:" + strconv.Itoa(cp), Peer: "http://127.0.0.1:" + strconv.Itoa(pp)}
		ms = append(ms, m)
		initial = append(initial, m.Name+"="+m.Peer)
	}
	for i := range ms {
		ms[i].InitialCluster = strings.Join(initial, ",")
	}
	return ms, nil
}

func etcdSingle() (*setup, error) {
	ms, err := etcdConfigs(1)
	if err != nil {
		return nil, err
	}
	before := rssKiB(os.Getpid())
	start := time.Now()
	e, err := startEtcd(ms[0])
	if err != nil {
		return nil, err
	}
	st, err := openEtcd([]string{ms[0].Client})
	if err != nil {
		e.Close()
		return nil, err
	}
	took := time.Since(start)
	rss := rssKiB(os.Getpid()) - before
	return &setup{name: "etcd 1 embedded", start: took, rssKiB: rss, store: st, cleanup: func() {
		st.Close()
		e.Close()
		os.RemoveAll(ms[0].Dir)
	}}, nil
}

func etcdCluster() (*setup, error) {
	ms, err := etcdConfigs(3)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	cmds, err := startMembers("etcd", 3, func(i int) string {
		b, _ := json.Marshal(ms[i])
		return string(b)
	})
	if err != nil {
		return nil, err
	}
	var eps []string
	for _, m := range ms {
		eps = append(eps, m.Client)
	}
	st, err := openEtcd(eps)
	if err != nil {
		killAll(cmds)
		return nil, err
	}
	took := time.Since(start)
	return &setup{name: "etcd 3 processes", start: took, rssKiB: sumRSS(cmds), store: st, cleanup: func() {
		st.Close()
		killAll(cmds)
		for _, m := range ms {
			os.RemoveAll(m.Dir)
		}
	}}, nil
}

func etcdMember(js string) error {
	var m etcdMemberConfig
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		return err
	}
	e, err := startEtcd(m)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	<-e.Err()
	return nil
}
