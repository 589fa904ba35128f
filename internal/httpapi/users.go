package httpapi

import (
	"bufio"
	"bytes"
	"crypto/md5"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// UsersFile is a password properties file in the format of Jetty's
// PropertyUserStore, which Confluent's REST proxy, schema registry and
// Connect read through their JAAS PropertyFileLoginModule:
//
//	# comment
//	alice: alice-secret,admin,developer
//	bob=MD5:5f4dcc3b5aa765d61d8327deb882cf99
//
// one user a line, the password then the user's roles, comma-separated.
// Passwords are plain or MD5: (hex MD5 of the password); Jetty's OBF: and
// CRYPT: forms are refused when the file is read. The file is read again
// when it changes (checked at most once a second, on a request), as
// Jetty's hot reload; a version that does not parse keeps the previous one
// in force and is logged by the Server.
type UsersFile struct {
	path    string
	current atomic.Pointer[userSet]
	checked atomic.Int64 // unix nanos of the last stat

	mu  sync.Mutex // serialises reloads; never held while a request waits
	err error      // the last reload's error
}

type userSet struct {
	users map[string]user
	mod   time.Time
	size  int64
}

type user struct {
	password string // plain, or "MD5:" + lower-case hex
	roles    []string
}

// OpenUsersFile reads the users file at path.
func OpenUsersFile(path string) (*UsersFile, error) {
	f := &UsersFile{path: path}
	set, err := readUsers(path)
	if err != nil {
		return nil, err
	}
	f.current.Store(set)
	f.checked.Store(time.Now().UnixNano())
	return f, nil
}

// Check verifies name's password and returns the user's roles.
func (f *UsersFile) Check(name, password string) (roles []string, ok bool) {
	f.maybeReload()
	u, found := f.current.Load().users[name]
	want := u.password
	got := password
	if hexSum, isMD5 := strings.CutPrefix(want, "MD5:"); isMD5 {
		sum := md5.Sum([]byte(password))
		want, got = hexSum, hex.EncodeToString(sum[:])
	}
	// Compared in constant time, and for an unknown user too, so the
	// answer's timing tells nothing about which users exist.
	match := subtle.ConstantTimeCompare([]byte(want), []byte(got)) == 1
	return u.roles, found && match
}

// Err is the error of the last failed reload, nil if the file in force is
// the one on disk.
func (f *UsersFile) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

func (f *UsersFile) maybeReload() {
	now := time.Now().UnixNano()
	last := f.checked.Load()
	if now-last < int64(time.Second) || !f.checked.CompareAndSwap(last, now) {
		return
	}
	if !f.mu.TryLock() {
		return
	}
	defer f.mu.Unlock()
	cur := f.current.Load()
	fi, err := os.Stat(f.path)
	if err != nil || (fi.ModTime().Equal(cur.mod) && fi.Size() == cur.size) {
		return // unchanged, or being replaced: looked at again later
	}
	set, err := readUsers(f.path)
	if err != nil {
		f.err = err
		return
	}
	f.err = nil
	f.current.Store(set)
}

func readUsers(path string) (*userSet, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	set := &userSet{users: map[string]user{}, mod: fi.ModTime(), size: fi.Size()}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' || text[0] == '!' {
			continue
		}
		i := strings.IndexAny(text, ":=")
		if i <= 0 {
			return nil, fmt.Errorf("%s:%d: want user: password[,role...]", path, line)
		}
		name := strings.TrimSpace(text[:i])
		fields := splitList(text[i+1:])
		if len(fields) == 0 {
			return nil, fmt.Errorf("%s:%d: user %s has no password", path, line, name)
		}
		pw := fields[0]
		switch {
		case strings.HasPrefix(pw, "OBF:"), strings.HasPrefix(pw, "CRYPT:"):
			return nil, fmt.Errorf("%s:%d: user %s: %s passwords are not supported (plain or MD5:)", path, line, name, pw[:strings.IndexByte(pw, ':')])
		case strings.HasPrefix(pw, "MD5:"):
			h := strings.ToLower(pw[4:])
			if b, err := hex.DecodeString(h); err != nil || len(b) != md5.Size {
				return nil, fmt.Errorf("%s:%d: user %s: MD5: wants 32 hex digits", path, line, name)
			}
			pw = "MD5:" + h
		}
		set.users[name] = user{password: pw, roles: fields[1:]}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return set, nil
}
