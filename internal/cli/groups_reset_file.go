package cli

// The CSV of kafka-consumer-groups.sh --reset-offsets --export and
// --from-file, and Kafka's spellings of --to-datetime and --by-duration.

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// writeResetCSV writes topic,partition,offset lines, with a leading group
// column when several groups are reset, as Kafka's export does.
func writeResetCSV(w io.Writer, rows []resetRow, withGroup bool) error {
	cw := csv.NewWriter(w)
	for _, r := range rows {
		rec := []string{r.Topic, strconv.Itoa(int(r.Partition)), strconv.FormatInt(r.NewOffset, 10)}
		if withGroup {
			rec = append([]string{r.Group}, rec...)
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// readResetFile reads a CSV written by writeResetCSV (or Kafka): three
// columns topic,partition,offset or four with the group first.
func readResetFile(path string) (map[string]map[string]map[int32]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--from-file: %w", err)
	}
	defer f.Close()
	cr := csv.NewReader(f)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	out := map[string]map[string]map[int32]int64{}
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("--from-file %s: %w", path, err)
		}
		group := ""
		switch len(rec) {
		case 3:
		case 4:
			group, rec = rec[0], rec[1:]
		default:
			return nil, fmt.Errorf("--from-file %s line %d: want topic,partition,offset or group,topic,partition,offset", path, line)
		}
		p, err1 := strconv.ParseInt(rec[1], 10, 32)
		o, err2 := strconv.ParseInt(rec[2], 10, 64)
		if rec[0] == "" || err1 != nil || err2 != nil || p < 0 || o < 0 {
			return nil, fmt.Errorf("--from-file %s line %d: bad entry %q", path, line, strings.Join(rec, ","))
		}
		if out[group] == nil {
			out[group] = map[string]map[int32]int64{}
		}
		if out[group][rec[0]] == nil {
			out[group][rec[0]] = map[int32]int64{}
		}
		out[group][rec[0]][int32(p)] = o
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--from-file %s: no offsets", path)
	}
	return out, nil
}

// parseResetTime accepts RFC 3339 and Kafka's --to-datetime format
// YYYY-MM-DDTHH:mm:SS.sss with an optional zone; without one the time is
// local, as in Kafka.
func parseResetTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.000Z0700", "2006-01-02T15:04:05.000Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{"2006-01-02T15:04:05.000", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--to-datetime %q: want RFC 3339 (2024-05-01T12:00:00Z) or YYYY-MM-DDTHH:mm:SS.sss", s)
}

// isoDuration is the subset of ISO 8601 durations Kafka's --by-duration
// takes (java.time.Duration.parse): PnDTnHnMn.nS.
var isoDuration = regexp.MustCompile(`^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)

// parseResetDuration accepts a Go duration (90m) or ISO 8601 (PT1H30M).
func parseResetDuration(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return d, nil
	}
	m := isoDuration.FindStringSubmatch(strings.ToUpper(s))
	if m == nil || s == "P" || strings.HasSuffix(strings.ToUpper(s), "T") {
		return 0, fmt.Errorf("--by-duration %q: want a positive duration such as 90m or PT1H30M", s)
	}
	var d time.Duration
	for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute, time.Second} {
		if m[i+1] == "" {
			continue
		}
		f, _ := strconv.ParseFloat(m[i+1], 64)
		d += time.Duration(f * float64(unit))
	}
	return d, nil
}
