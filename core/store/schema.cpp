#include "core/store/schema.h"

namespace crosslab::store {
namespace {

// Schema 1: everything a lab records, from the first release on.
// Times are ISO-8601 UTC text ("2026-11-29T16:40:00Z"); money is USD (REAL);
// durations are seconds unless the column name says otherwise.
constexpr std::string_view kSchema1 = R"sql(
CREATE TABLE labs (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  crosslab_version TEXT NOT NULL
);
CREATE TABLE venues (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL CHECK (kind IN ('local', 'ssh', 'cloud')),
  provider TEXT,
  region TEXT,
  accelerator TEXT,
  availability TEXT CHECK (availability IN
    ('unknown', 'available', 'not_offered', 'not_available', 'no_quota', 'capacity', 'busy', 'idle')),
  price_per_hour REAL,
  spot_price_per_hour REAL,
  probed_at TEXT,
  notes TEXT
);
-- One row per VM life: provision -> delete.
CREATE TABLE boxes (
  id INTEGER PRIMARY KEY,
  venue_id INTEGER NOT NULL REFERENCES venues(id),
  name TEXT NOT NULL,
  host TEXT,
  port INTEGER,
  ssh_user TEXT,
  gpu_model TEXT,
  gpu_count INTEGER,
  price_per_hour REAL,
  min_minutes INTEGER,
  state TEXT NOT NULL DEFAULT 'requested',
  provisioned_at TEXT,
  ready_at TEXT,
  deleted_at TEXT
);
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  kind TEXT NOT NULL DEFAULT 'train' CHECK (kind IN ('train', 'serve', 'eval')),
  engine TEXT NOT NULL DEFAULT 'crosslab',
  model TEXT,
  venue_id INTEGER REFERENCES venues(id),
  box_id INTEGER REFERENCES boxes(id),
  status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN
    ('pending', 'running', 'finished', 'failed', 'stalled', 'stopped')),
  status_reason TEXT,
  recipe_json TEXT,
  run_dir TEXT,
  total_steps INTEGER,
  started_at TEXT,
  ended_at TEXT
);
-- One row per logged step; a step is never doubled (resume rewrites, never appends twice).
CREATE TABLE metrics (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  loss REAL,
  lr REAL,
  epoch REAL,
  eval_loss REAL,
  tokens INTEGER,
  wall_s REAL,
  PRIMARY KEY (run_id, step)
) WITHOUT ROWID;
CREATE TABLE events (
  id INTEGER PRIMARY KEY,
  run_id INTEGER REFERENCES runs(id) ON DELETE CASCADE,
  box_id INTEGER REFERENCES boxes(id) ON DELETE CASCADE,
  at TEXT NOT NULL,
  type TEXT NOT NULL,
  message TEXT,
  data_json TEXT
);
CREATE INDEX events_run ON events(run_id, at);
CREATE INDEX events_box ON events(box_id, at);
CREATE TABLE benchmarks (
  id INTEGER PRIMARY KEY,
  label TEXT NOT NULL,
  url TEXT,
  model TEXT,
  endpoint TEXT,
  venue_id INTEGER REFERENCES venues(id),
  box_id INTEGER REFERENCES boxes(id),
  command TEXT,
  price_per_hour REAL,
  started_at TEXT NOT NULL,
  ended_at TEXT
);
-- Per-concurrency results; result_json holds the full vLLM-style object.
CREATE TABLE benchmark_levels (
  benchmark_id INTEGER NOT NULL REFERENCES benchmarks(id) ON DELETE CASCADE,
  concurrency INTEGER NOT NULL,
  completed INTEGER,
  failed INTEGER,
  output_throughput REAL,
  per_stream_tok_s REAL,
  mean_ttft_ms REAL,
  p99_tpot_ms REAL,
  usd_per_m_output_tokens REAL,
  collapse TEXT,
  result_json TEXT NOT NULL,
  PRIMARY KEY (benchmark_id, concurrency)
) WITHOUT ROWID;
-- Eval outputs; eval_sha256 names the frozen eval set they answer.
CREATE TABLE samples (
  id INTEGER PRIMARY KEY,
  eval_sha256 TEXT NOT NULL,
  question_id TEXT NOT NULL,
  model TEXT NOT NULL,
  output TEXT NOT NULL,
  source TEXT,
  prompt_template TEXT,
  created_at TEXT NOT NULL,
  UNIQUE (eval_sha256, question_id, model)
);
-- One verdict per instrument (format, quotes, judge:<name>, gate, human) per sample.
CREATE TABLE verdicts (
  id INTEGER PRIMARY KEY,
  sample_id INTEGER NOT NULL REFERENCES samples(id) ON DELETE CASCADE,
  instrument TEXT NOT NULL,
  verdict TEXT NOT NULL,
  score REAL,
  detail_json TEXT,
  at TEXT NOT NULL
);
CREATE INDEX verdicts_sample ON verdicts(sample_id, instrument);
CREATE TABLE ledger (
  id INTEGER PRIMARY KEY,
  box_id INTEGER REFERENCES boxes(id),
  at TEXT NOT NULL,
  category TEXT NOT NULL CHECK (category IN ('compute', 'staging', 'api', 'other')),
  usd REAL NOT NULL,
  minutes REAL,
  note TEXT
);
CREATE TABLE friction (
  id INTEGER PRIMARY KEY,
  at TEXT NOT NULL,
  box_id INTEGER REFERENCES boxes(id),
  run_id INTEGER REFERENCES runs(id),
  title TEXT NOT NULL,
  cause TEXT,
  fix TEXT,
  minutes REAL,
  usd REAL
);
)sql";

// Schema 2: training throughput per step, and a per-lab key/value settings table
// (the GUI keeps lab-scoped choices there rather than in the user's QSettings).
constexpr std::string_view kSchema2 = R"sql(
ALTER TABLE metrics ADD COLUMN tokens_per_s REAL;
CREATE TABLE settings (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
)sql";

// Schema 3 (venues): how to reach a box again (key file, the provider's VM name and
// team), quota figures on the availability ladder, and the ladder's timeline
// (account created, key minted, provision request, SSH ready, first token).
constexpr std::string_view kSchema3 = R"sql(
ALTER TABLE boxes ADD COLUMN key_file TEXT;
ALTER TABLE boxes ADD COLUMN provider_vm TEXT;
ALTER TABLE boxes ADD COLUMN team TEXT;
ALTER TABLE venues ADD COLUMN quota TEXT;
CREATE TABLE timeline (
  id INTEGER PRIMARY KEY,
  venue_id INTEGER NOT NULL REFERENCES venues(id) ON DELETE CASCADE,
  milestone TEXT NOT NULL,
  at TEXT NOT NULL,
  note TEXT
);
CREATE INDEX timeline_venue ON timeline(venue_id, at);
)sql";

// Schema 4 (venues money): a box life carries everything needed to end it (provider,
// API URL, key variable — team is from schema 3); timeline rows may belong to a life
// and say where they came from (crosslab saw it, a person entered it, a file imported
// it); every offers fetch is kept as a probe (what, at what price, when). Lives recorded
// before this had a provider VM only from Hot Aisle.
constexpr std::string_view kSchema4 = R"sql(
ALTER TABLE boxes ADD COLUMN provider TEXT;
ALTER TABLE boxes ADD COLUMN api_url TEXT;
ALTER TABLE boxes ADD COLUMN api_key_env TEXT;
UPDATE boxes SET provider = 'hotaisle' WHERE provider_vm IS NOT NULL AND provider IS NULL;
ALTER TABLE timeline ADD COLUMN box_id INTEGER REFERENCES boxes(id) ON DELETE SET NULL;
ALTER TABLE timeline ADD COLUMN source TEXT NOT NULL DEFAULT 'crosslab'
  CHECK (source IN ('crosslab', 'entered', 'imported'));
CREATE TABLE probes (
  id INTEGER PRIMARY KEY,
  venue_id INTEGER NOT NULL REFERENCES venues(id) ON DELETE CASCADE,
  at TEXT NOT NULL,
  availability TEXT NOT NULL,
  price_per_hour REAL,
  offers_json TEXT NOT NULL,
  note TEXT
);
CREATE INDEX probes_venue ON probes(venue_id, at);
)sql";

// Schema 5 (ledger): the typed record of a box life (work items with their status, and
// transfers with bytes and times) from which the ledger derives compute, staging, debug
// and idle; credits; the friction log's category, ecosystem flag and origin; and the
// hashes of a run's base weights and data (the report's replication groups).
constexpr std::string_view kSchema5 = R"sql(
CREATE TABLE box_work (
  id INTEGER PRIMARY KEY,
  box_id INTEGER NOT NULL REFERENCES boxes(id) ON DELETE CASCADE,
  kind TEXT NOT NULL CHECK (kind IN ('train', 'bench', 'eval', 'serve')),
  name TEXT NOT NULL,
  run_id INTEGER REFERENCES runs(id) ON DELETE SET NULL,
  benchmark_id INTEGER REFERENCES benchmarks(id) ON DELETE SET NULL,
  started_at TEXT NOT NULL,
  ended_at TEXT,
  status TEXT NOT NULL DEFAULT 'running' CHECK (status IN
    ('running', 'finished', 'failed', 'stalled', 'stopped')),
  reason TEXT
);
CREATE INDEX box_work_box ON box_work(box_id, started_at);
CREATE TABLE box_transfers (
  id INTEGER PRIMARY KEY,
  box_id INTEGER NOT NULL REFERENCES boxes(id) ON DELETE CASCADE,
  direction TEXT NOT NULL CHECK (direction IN ('push', 'pull')),
  what TEXT NOT NULL,
  bytes INTEGER NOT NULL CHECK (bytes >= 0),
  started_at TEXT NOT NULL,
  ended_at TEXT NOT NULL
);
CREATE INDEX box_transfers_box ON box_transfers(box_id, started_at);
CREATE TABLE credits (
  id INTEGER PRIMARY KEY,
  at TEXT NOT NULL,
  usd REAL NOT NULL CHECK (usd >= 0),
  note TEXT
);
ALTER TABLE friction ADD COLUMN category TEXT NOT NULL DEFAULT 'other';
ALTER TABLE friction ADD COLUMN ecosystem_specific INTEGER NOT NULL DEFAULT 0;
ALTER TABLE friction ADD COLUMN origin TEXT;
ALTER TABLE runs ADD COLUMN weights_sha256 TEXT;
ALTER TABLE runs ADD COLUMN data_sha256 TEXT;
)sql";

// Schema 6 (runs): a per-run change sequence on metrics rows (a row rewritten later, e.g.
// when its eval loss arrives, moves past the others, so a reader polling by seq never
// misses it), and how a run was launched (where, its work folder and events file), so a
// window opened later can follow it again.
constexpr std::string_view kSchema6 = R"sql(
ALTER TABLE metrics ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
CREATE INDEX metrics_seq ON metrics(run_id, seq);
ALTER TABLE runs ADD COLUMN launch_json TEXT;
CREATE INDEX runs_dir ON runs(run_dir);
)sql";

// Schema 7 (benchmarks): how a sweep ended. A sweep whose requests all failed is recorded
// as failed with its error, never as a 0 tok/s measurement.
constexpr std::string_view kSchema7 = R"sql(
ALTER TABLE benchmarks ADD COLUMN status TEXT;
ALTER TABLE benchmarks ADD COLUMN error TEXT;
)sql";

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> all = {
      {1, "lab tables", kSchema1},
      {2, "metrics.tokens_per_s, settings", kSchema2},
      {3, "boxes.key_file/provider_vm/team, venues.quota, timeline", kSchema3},
      {4, "boxes.provider/api_url/api_key_env, timeline.box_id/source, probes", kSchema4},
      {5, "box_work, box_transfers, credits, friction.category/ecosystem_specific/origin, runs.*_sha256", kSchema5},
      {6, "metrics.seq, runs.launch_json", kSchema6},
      {7, "benchmarks.status/error", kSchema7},
  };
  return all;
}

int currentSchemaVersion() { return migrations().back().version; }

const std::vector<std::string_view>& labTables() {
  static const std::vector<std::string_view> tables = {
      "labs",    "venues",   "boxes",   "runs",   "metrics", "events",   "benchmarks",
      "benchmark_levels", "samples", "verdicts", "ledger", "friction", "settings", "timeline", "probes",
      "box_work", "box_transfers", "credits"};
  return tables;
}

}  // namespace crosslab::store
