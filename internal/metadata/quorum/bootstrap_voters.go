package quorum

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vltava/vltava/internal/metadata"
)

// BootstrapVotersFile holds the initial voter set of a dynamic quorum, as
// storage format writes it (--standalone, --initial-controllers) in the
// metadata partition's dir, next to raft.db: the counterpart of the
// bootstrap checkpoint kafka-storage.sh writes with a VotersRecord. The
// first start of a node whose raft store is empty bootstraps raft with
// exactly these voters; later starts ignore it (raft's configuration is
// then the voter set). Format: comment lines starting with '#', then one
// voter per line in --initial-controllers syntax:
//
//	<node id>@<host>:<port>:<directory id>
const BootstrapVotersFile = "bootstrap.voters"

// ParseInitialControllers parses --initial-controllers (KIP-853):
// comma-separated id@host:port:directory-id entries, every id and every
// directory id distinct.
func ParseInitialControllers(s string) ([]Member, error) {
	var out []Member
	ids := map[int32]bool{}
	dirs := map[metadata.Uuid]bool{}
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		m, err := parseInitialController(e)
		if err != nil {
			return nil, err
		}
		if ids[m.Key.ID] || dirs[m.Key.DirectoryID] {
			return nil, fmt.Errorf("initial controllers: %q repeats a node id or directory id", e)
		}
		ids[m.Key.ID], dirs[m.Key.DirectoryID] = true, true
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, errors.New("initial controllers: no entries")
	}
	return out, nil
}

func parseInitialController(e string) (Member, error) {
	bad := func(why string) (Member, error) {
		return Member{}, fmt.Errorf("initial controllers: %q: %s (want id@host:port:directory-id)", e, why)
	}
	idStr, rest, ok := strings.Cut(e, "@")
	if !ok {
		return bad("no '@'")
	}
	id, err := strconv.ParseInt(idStr, 10, 32)
	if err != nil || id < 0 {
		return bad("invalid node id")
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return bad("no directory id")
	}
	addr, dirStr := rest[:i], rest[i+1:]
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
		return bad("invalid host:port")
	}
	dir, err := metadata.ParseUuid(dirStr)
	if err != nil || dir.IsReserved() {
		return bad("invalid directory id")
	}
	return Member{Key: ReplicaKey{ID: int32(id), DirectoryID: dir}, Addr: addr, Voter: true}, nil
}

// FormatInitialController is m in --initial-controllers syntax.
func FormatInitialController(m Member) string {
	return fmt.Sprintf("%d@%s:%s", m.Key.ID, m.Addr, m.Key.DirectoryID)
}

// WriteBootstrapVoters writes voters to dir/BootstrapVotersFile, creating
// dir.
func WriteBootstrapVoters(dir string, voters []Member) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteString("# Initial voters of the metadata quorum (KIP-853), written by vltava storage format.\n")
	for _, v := range voters {
		b.WriteString(FormatInitialController(v))
		b.WriteByte('\n')
	}
	tmp := filepath.Join(dir, BootstrapVotersFile+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err = f.Write(b.Bytes()); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, BootstrapVotersFile))
}

// ReadBootstrapVoters reads dir/BootstrapVotersFile; an error wrapping
// os.ErrNotExist means the node was formatted without initial voters.
func ReadBootstrapVoters(dir string) ([]Member, error) {
	data, err := os.ReadFile(filepath.Join(dir, BootstrapVotersFile))
	if err != nil {
		return nil, err
	}
	var entries []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && line[0] != '#' {
			entries = append(entries, line)
		}
	}
	voters, err := ParseInitialControllers(strings.Join(entries, ","))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, BootstrapVotersFile), err)
	}
	return voters, nil
}
