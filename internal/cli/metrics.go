package cli

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/docjobs/docjobs/internal/job"
)

type jobCounter interface {
	JobCountsByStatus(ctx context.Context) (map[job.Status]int, error)
}

// jobsCollector reads docjobs_jobs{status} from the database at scrape time,
// so every API node reports the same truth, including work done by others.
func jobsCollector(st jobCounter, log *slog.Logger) prometheus.Collector {
	return &jobsByStatus{
		st:  st,
		log: log,
		desc: prometheus.NewDesc("docjobs_jobs", "Jobs in the database by status.",
			[]string{"status"}, nil),
	}
}

type jobsByStatus struct {
	st   jobCounter
	log  *slog.Logger
	desc *prometheus.Desc
}

func (c *jobsByStatus) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *jobsByStatus) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := c.st.JobCountsByStatus(ctx)
	if err != nil {
		c.log.Warn("metrics: count jobs", "err", err)
		return
	}
	for _, s := range []job.Status{job.StatusNew, job.StatusRunning, job.StatusComplete, job.StatusFailed, job.StatusCancelled} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[s]), string(s))
	}
}
