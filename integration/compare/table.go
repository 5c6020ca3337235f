package main

import (
	"fmt"
	"io"
	"strings"
)

// row is the outcome of one workload over all its rounds.
type row struct {
	w      workload
	troupe []float64
	proto  []float64
}

// met reports whether the medians meet the workload's target; base is the
// median of the row named by relTo.
func (r row) met(base float64) (ok, has bool) {
	if r.w.goal == 0 {
		return false, false
	}
	t, p := median(r.troupe), median(r.proto)
	v := t
	if r.w.relTo != "" {
		if base == 0 {
			return false, false
		}
		v = t / base
	}
	if r.w.ratio {
		if p == 0 {
			return false, true
		}
		v = t / p
	}
	if r.w.higher {
		return v >= r.w.goal, true
	}
	return v <= r.w.goal, true
}

// writeTable prints the rows as a markdown table of medians.
func writeTable(out io.Writer, rows []row) {
	fmt.Fprintln(out, "| workload | troupe | protoactor | ratio T/P | target |")
	fmt.Fprintln(out, "| --- | ---: | ---: | ---: | --- |")
	medians := map[string]float64{}
	for _, r := range rows {
		medians[r.w.name] = median(r.troupe)
	}
	for _, r := range rows {
		t, p := median(r.troupe), median(r.proto)
		ratio, ps := "–", "–"
		if len(r.proto) > 0 {
			ps = formatValue(p, r.w.unit)
		}
		if p != 0 {
			ratio = fmt.Sprintf("%.2f×", t/p)
		}
		target := r.w.target()
		base := medians[r.w.relTo]
		if r.w.relTo != "" && base != 0 {
			target += fmt.Sprintf(" (%s)", formatValue(r.w.goal*base, r.w.unit))
		}
		if ok, has := r.met(base); has {
			if ok {
				target += " ✅"
			} else {
				target += " ❌"
			}
		}
		fmt.Fprintf(out, "| %s (%d rounds) | %s | %s | %s | %s |\n",
			r.w.name, len(r.troupe), formatValue(t, r.w.unit), ps, ratio, target)
	}
}

// formatValue formats v in unit, with an M or k prefix for rates.
func formatValue(v float64, unit string) string {
	if strings.HasSuffix(unit, "/s") {
		switch {
		case v >= 1e6:
			return fmt.Sprintf("%.2f M %s", v/1e6, unit)
		case v >= 1e3:
			return fmt.Sprintf("%.1f k %s", v/1e3, unit)
		}
		return fmt.Sprintf("%.0f %s", v, unit)
	}
	if unit == "µs" || unit == "MiB" {
		return fmt.Sprintf("%.1f %s", v, unit)
	}
	return fmt.Sprintf("%.0f %s", v, unit)
}

// count formats n as 10k, 1M, 250k...
func count(n int) string {
	switch {
	case n >= 1e6 && n%1e6 == 0:
		return fmt.Sprintf("%dM", n/1e6)
	case n >= 1e3 && n%1e3 == 0:
		return fmt.Sprintf("%dk", n/1e3)
	}
	return fmt.Sprint(n)
}
