package main

import (
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// What the test checks, computed by the Collector's own pdata from what its
// receiver decoded: per profile, the resource's attributes, the sample type,
// the sum of the first value of all samples, and per function the values of
// the samples where it is the leaf (self) and where it is on the stack
// (inclusive, once per sample), and how many samples carry each attribute.
type profileSummary struct {
	Resource    map[string]any   `json:"resource"`
	Scope       string           `json:"scope"`
	SampleType  string           `json:"sample_type"`
	PeriodType  string           `json:"period_type"`
	Period      int64            `json:"period"`
	TimeNanos   uint64           `json:"time_unix_nano"`
	Duration    uint64           `json:"duration_nano"`
	Samples     int              `json:"samples"`
	Total       int64            `json:"total"`
	Self        map[string]int64 `json:"self"`
	Inclusive   map[string]int64 `json:"inclusive"`
	SampleAttrs map[string]int   `json:"sample_attrs"`
	Threads     map[string]int64 `json:"threads"`
	BadIndices  int              `json:"bad_indices"`
}

type batchSummary struct {
	Profiles []profileSummary `json:"profiles"`
}

func summarize(pd pprofile.Profiles) batchSummary {
	d := pd.Dictionary()
	strs := d.StringTable()
	str := func(i int32) string {
		if i < 0 || int(i) >= strs.Len() {
			return "<bad string index>"
		}
		return strs.At(int(i))
	}
	out := batchSummary{Profiles: []profileSummary{}}
	for i := 0; i < pd.ResourceProfiles().Len(); i++ {
		rp := pd.ResourceProfiles().At(i)
		res := rp.Resource().Attributes().AsRaw()
		for j := 0; j < rp.ScopeProfiles().Len(); j++ {
			sp := rp.ScopeProfiles().At(j)
			for k := 0; k < sp.Profiles().Len(); k++ {
				p := sp.Profiles().At(k)
				ps := profileSummary{
					Resource:    res,
					Scope:       sp.Scope().Name(),
					SampleType:  str(p.SampleType().TypeStrindex()) + "/" + str(p.SampleType().UnitStrindex()),
					PeriodType:  str(p.PeriodType().TypeStrindex()) + "/" + str(p.PeriodType().UnitStrindex()),
					Period:      p.Period(),
					TimeNanos:   uint64(p.Time()),
					Duration:    p.DurationNano(),
					Self:        map[string]int64{},
					Inclusive:   map[string]int64{},
					SampleAttrs: map[string]int{},
					Threads:     map[string]int64{},
				}
				summarizeSamples(d, p, str, &ps)
				out.Profiles = append(out.Profiles, ps)
			}
		}
	}
	return out
}

func summarizeSamples(d pprofile.ProfilesDictionary, p pprofile.Profile, str func(int32) string, ps *profileSummary) {
	stacks, locs, fns, attrs := d.StackTable(), d.LocationTable(), d.FunctionTable(), d.AttributeTable()
	for s := 0; s < p.Samples().Len(); s++ {
		smp := p.Samples().At(s)
		var v int64
		if smp.Values().Len() > 0 {
			v = smp.Values().At(0)
		}
		ps.Samples++
		ps.Total += v
		tid := ""
		for a := 0; a < smp.AttributeIndices().Len(); a++ {
			ai := smp.AttributeIndices().At(a)
			if ai < 0 || int(ai) >= attrs.Len() {
				ps.BadIndices++
				continue
			}
			kv := attrs.At(int(ai))
			key := str(kv.KeyStrindex())
			ps.SampleAttrs[key]++
			if key == "thread.id" {
				tid = kv.Value().AsString()
			}
		}
		if tid != "" {
			ps.Threads[tid] += v
		}
		si := smp.StackIndex()
		if si < 0 || int(si) >= stacks.Len() {
			ps.BadIndices++
			continue
		}
		seen := map[string]bool{}
		li := stacks.At(int(si)).LocationIndices()
		for l := 0; l < li.Len(); l++ {
			idx := li.At(l)
			if idx < 0 || int(idx) >= locs.Len() {
				ps.BadIndices++
				continue
			}
			lines := locs.At(int(idx)).Lines()
			name := "<no function>"
			if lines.Len() > 0 {
				fi := lines.At(0).FunctionIndex()
				if fi < 0 || int(fi) >= fns.Len() {
					ps.BadIndices++
				} else {
					name = str(fns.At(int(fi)).NameStrindex())
				}
			}
			if l == 0 {
				ps.Self[name] += v
			}
			if !seen[name] {
				seen[name] = true
				ps.Inclusive[name] += v
			}
		}
	}
}
