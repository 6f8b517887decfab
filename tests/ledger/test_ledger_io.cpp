// Box lives as JSON Lines: import → export → import is a fixed point; every refusal names
// its line and records nothing; redaction of planted hosts, users, keys and secrets in
// the export; the friction log's requests and its pre-filled offers.
#include <QtTest>

#include <sstream>

#include "core/ledger/friction_log.h"
#include "core/ledger/lab_ledger.h"
#include "core/ledger/ledger_text.h"
#include "core/ledger/life_jsonl.h"
#include "core/ledger/life_recorder.h"
#include "core/report/redactor.h"
#include "core/store/lab_store.h"
#include "core/store/run_store.h"
#include "core/venues/meter.h"
#include "core/venues/venue_store.h"

using namespace crosslab::ledger;
using crosslab::report::Redactor;
using crosslab::store::LabStore;
using crosslab::venues::SecretGuard;

namespace {

// Canonical lines, exactly as export writes them.
const std::string kLives =
    R"({"box":"BOX-1","provider":"hotaisle","gpu":"MI300X","gpus":1,"price_per_hour":2.99,"min_minutes":1,"provisioned_at":"2026-01-04T22:39:40Z","deleted_at":"2026-01-04T23:30:00Z","work":[{"kind":"train","name":"8b-lora","start":"2026-01-04T23:05:00Z","end":"2026-01-04T23:10:48Z","status":"finished"},{"kind":"serve","name":"vllm","start":"2026-01-04T23:11:00Z","end":"2026-01-04T23:29:00Z","status":"finished"}],"transfers":[{"direction":"pull","what":"weights","bytes":16060000000,"start":"2026-01-04T22:45:00Z","end":"2026-01-04T22:47:31.500Z"}]})"
    "\n"
    R"({"box":"BOX-2","provider":"hotaisle","gpu":"MI300X","gpus":2,"price_per_hour":5.98,"min_minutes":60,"provisioned_at":"2026-01-05T10:00:00Z","deleted_at":"2026-01-05T12:20:00Z","work":[{"kind":"train","name":"70b-lora","start":"2026-01-05T10:20:00Z","end":"2026-01-05T10:30:00Z","status":"failed"},{"kind":"train","name":"70b-lora","start":"2026-01-05T10:40:00Z","end":"2026-01-05T12:09:12Z","status":"finished"}],"transfers":[]})"
    "\n"
    R"({"box":"BOX-1","provider":"hotaisle","gpu":"MI300X","gpus":1,"price_per_hour":2.99,"min_minutes":1,"provisioned_at":"2026-01-06T09:00:00Z","deleted_at":"2026-01-06T10:00:00Z","work":[{"kind":"bench","name":"gemma sweep","start":"2026-01-06T09:55:00Z","end":"2026-01-06T09:57:00Z","status":"finished"}],"transfers":[{"direction":"push","what":"eval set","bytes":123456,"start":"2026-01-06T09:01:00Z","end":"2026-01-06T09:01:02Z"}]})"
    "\n";

std::vector<ParsedLife> parse(const std::string& text) {
  std::istringstream in(text);
  return parseLivesJsonl(in);
}

std::int64_t rows(LabStore& lab) {
  return lab.db().scalarInt("SELECT (SELECT count(*) FROM boxes) + (SELECT count(*) FROM box_work) + "
                            "(SELECT count(*) FROM box_transfers) + (SELECT count(*) FROM venues)");
}

std::string exportOf(LabStore& lab) {
  auto r = Redactor::fromLab(lab, SecretGuard{});
  return exportLivesJsonl(readLives(lab), &r);
}

}  // namespace

class TestLedgerIo : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  int labs_ = 0;
  LabStore newLab() { return LabStore::create(tmp_.path().toStdString() + "/lab" + std::to_string(++labs_), "t"); }

 private slots:
  void importExportImportIsAFixedPoint() {
    auto a = newLab();
    QCOMPARE(importLives(a, parse(kLives)), size_t{3});
    const std::string first = exportOf(a);
    QCOMPARE(QString::fromStdString(first), QString::fromStdString(kLives));
    auto b = newLab();
    importLives(b, parse(first));
    QCOMPARE(exportOf(b), first);
    // The same lives written the issue's way (spaces, other key order) read the same.
    const std::string spaced =
        R"({"provider": "hotaisle", "box": "BOX-9", "gpu": "MI300X", "gpus": 1, "price_per_hour": 2.99,)"
        R"( "min_minutes": 1, "provisioned_at": "2026-01-04T22:39:40Z", "deleted_at": "2026-01-04T23:30:00+00:00",)"
        R"( "work": [], "transfers": []})";
    const auto p = parse("\n" + spaced + "\n\n");
    QCOMPARE(p.size(), size_t{1});
    QCOMPARE(p[0].line, 2);
    QCOMPARE(*p[0].life.deleted - p[0].life.provisioned, 50 * 60 + 20.0);
    // The derived ledger is the same in both labs.
    QCOMPARE(QString::fromStdString(ledgerJson(readLedger(a, 0), nullptr)),
             QString::fromStdString(ledgerJson(readLedger(b, 0), nullptr)));
  }

  void everyRefusalNamesItsLineAndRecordsNothing() {
    auto lab = newLab();
    importLives(lab, parse(kLives));
    const auto before = rows(lab);
    const std::string good = kLives.substr(0, kLives.find('\n') + 1);
    auto replaced = [&](const std::string& from, const std::string& to) {
      std::string line = good;
      const auto pos = line.find(from);
      if (pos == std::string::npos) qFatal("fixture text not found: %s", from.c_str());
      return line.replace(pos, from.size(), to);
    };
    // A clean first line (a box of its own), then the bad one on line 2.
    const std::string ok =
        R"({"box":"BOX-7","provider":"p","gpu":"","gpus":0,"price_per_hour":0,"min_minutes":0,"provisioned_at":"2027-01-01T00:00:00Z","deleted_at":"2027-01-01T01:00:00Z","work":[],"transfers":[]})"
        "\n";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {replaced(R"("gpu":"MI300X",)", ""), "missing \"gpu\""},
        {replaced(R"("end":"2026-01-04T23:10:48Z")", R"("end":"2026-01-04T23:00:00Z")"), "ends before it starts"},
        {replaced(R"("status":"finished"})", R"("status":"done"})"), "unknown status 'done'"},
        {replaced(R"("kind":"train")", R"("kind":"party")"), "unknown kind 'party'"},
        {replaced(R"("direction":"pull")", R"("direction":"sideways")"), "unknown direction"},
        {replaced(R"("bytes":16060000000)", R"("bytes":-5)"), "\"bytes\" is negative"},
        {replaced(R"("gpus":1)", R"("gpus":"one")"), "\"gpus\" is not a whole number"},
        {replaced(R"("provisioned_at":"2026-01-04T22:39:40Z")", R"("provisioned_at":"yesterday")"),
         "not an ISO-8601 UTC time"},
        {replaced(R"("deleted_at":"2026-01-04T23:30:00Z")", R"("deleted_at":"2026-01-04T20:00:00Z")"),
         "deleted before it was provisioned"},
        {replaced(R"("min_minutes":1,)", R"("min_minutes":1,"minimum":5,)"), "unknown field 'minimum'"},
        {"{\"box\": \n", "is not JSON"},
        {"{\"box\": 6666e6666}\n", "is not JSON"},  // a number past double's range (fuzz finding)
        {replaced(R"("min_minutes":1,)", R"("min_minutes":1,"\nd":5,)"), "unknown field '\\nd'"},  // one line (fuzz)
        {good, "overlaps a life the lab already holds"},
    };
    for (const auto& [line, expect] : cases) {
      try {
        importLives(lab, parse(ok + line));
        QFAIL(qPrintable("accepted: " + QString::fromStdString(line)));
      } catch (const ImportError& e) {
        QCOMPARE(e.line(), 2);
        QVERIFY2(QString(e.what()).startsWith("line 2: ") && QString(e.what()).contains(QString::fromStdString(expect)),
                 e.what());
      }
      QCOMPARE(rows(lab), before);  // nothing recorded, not even the good first line
    }
    // Two overlapping lives of one box in the same file.
    const std::string later = std::string(good).replace(good.find("BOX-1"), 5, "BOX-5");
    try {
      importLives(lab, parse(later + later));
      QFAIL("overlap accepted");
    } catch (const ImportError& e) {
      QCOMPARE(e.line(), 2);
      QVERIFY2(QString(e.what()).contains("overlaps its life on line 1"), e.what());
    }
    QCOMPARE(rows(lab), before);
  }

  void exportsRedactPlantedHostsUsersKeysAndSecrets() {
    auto lab = newLab();
    crosslab::venues::VenueStore venues(lab);
    crosslab::venues::BoxRow b;
    b.venueId = venues.ensureVenue("hotaisle", "cloud", "hotaisle");
    b.name = "mi300x-alice";
    b.host = "203.0.113.7";
    b.user = "alice";
    b.keyFile = "/home/alice/.ssh/lab_ed25519";
    b.pricePerHour = 2.99;
    b.minMinutes = 1;
    b.provisionedAt = "2026-01-04T22:39:40Z";
    const auto first = venues.addBox(b);
    venues.endBox(first, "deleted", *crosslab::venues::parseUtc("2026-01-04T23:00:00Z"));
    b.name = "spark";
    b.host = "dgx.internal.example";
    b.provisionedAt = "2026-01-05T00:00:00Z";
    const auto second = venues.addBox(b);
    const std::string token = "hf_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef12";
    const std::string planted = "supersecretvalue-123";
    LifeRecorder rec(lab);
    rec.transfer(second, Direction::Push, "alice@203.0.113.7:/home/alice/models via /home/alice/.ssh/id_rsa", 10, 1, 2);
    rec.transfer(second, Direction::Pull, "from 198.51.100.4 and dgx.internal.example, token " + token, 10, 3, 4);
    const auto w = rec.workStarted(second, WorkKind::Train, "run with " + planted + " on spark", 5);
    rec.workEnded(w, WorkStatus::Finished, 6);
    SecretGuard guard;
    guard.addSecret("CROSSLAB_TEST_TOKEN", planted);
    const auto redactor = Redactor::fromLab(lab, guard);
    const std::string out = exportLivesJsonl(readLives(lab), &redactor);
    for (const std::string& leaked : {std::string("203.0.113.7"), std::string("alice"), std::string("lab_ed25519"),
                                      std::string("id_rsa"), std::string("198.51.100.4"), std::string("dgx.internal"),
                                      token, planted, std::string("mi300x"), std::string("spark")})
      QVERIFY2(out.find(leaked) == std::string::npos, qPrintable(QString::fromStdString(leaked + " in " + out)));
    QVERIFY2(out.find(R"("box":"BOX-1")") != std::string::npos, out.c_str());
    QVERIFY2(out.find(R"("box":"BOX-2")") != std::string::npos, out.c_str());
    QVERIFY2(out.find("BOX-1:~/models via [key]") != std::string::npos, out.c_str());
    QVERIFY2(out.find("from [ip] and BOX-2, token ***") != std::string::npos, out.c_str());
    redactor.guardOutput(out, "the export");  // nothing left for the guard

    // --no-redact keeps names and hosts, never secrets.
    const auto plain = Redactor::fromLab(lab, guard, false);
    const std::string raw = exportLivesJsonl(readLives(lab), &plain);
    QVERIFY(raw.find("203.0.113.7") != std::string::npos && raw.find("mi300x-alice") != std::string::npos);
    QVERIFY(raw.find(token) == std::string::npos && raw.find(planted) == std::string::npos);
  }

  void frictionRequestsAndOffers() {
    auto lab = newLab();
    FrictionLog log(lab);
    FrictionEntry e;
    e.title = "stale apt index blocked python3-venv";
    e.category = FrictionCategory::VenueHygiene;
    e.minutes = 3;
    e.fix = "apt-get update";
    const auto id = log.requestAdd(e);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, log.requestAdd(FrictionEntry{}));  // no title
    FrictionEntry bad = e;
    bad.minutes = -1;
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, log.requestAdd(bad));
    FrictionEdit edit;
    edit.category = FrictionCategory::StackLag;
    edit.ecosystemSpecific = true;
    edit.usd = std::optional<double>(0.15);
    log.requestEdit(id, edit);
    FrictionEdit badEdit;
    badEdit.title = "  ";
    badEdit.fix = "changed";
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, log.requestEdit(id, badEdit));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, log.requestEdit(999, edit));
    const auto got = *log.find(id);
    QCOMPARE(got.category, FrictionCategory::StackLag);
    QCOMPARE(got.fix, std::string("apt-get update"));  // the refused edit changed nothing
    QCOMPARE(*got.usd, 0.15);
    QCOMPARE(log.ecosystemSpecificCount(), std::int64_t{1});
    QCOMPARE(*frictionCategoryFrom("stack/version lag"), FrictionCategory::StackLag);
    QCOMPARE(*frictionCategoryFrom("own_error"), FrictionCategory::OwnError);
    QVERIFY(!frictionCategoryFrom("bad luck"));

    // A failed run on a $6/h box, 40 dead minutes: the offer is pre-filled at the box's price.
    crosslab::venues::VenueStore venues(lab);
    crosslab::venues::BoxRow b;
    b.venueId = venues.ensureVenue("hotaisle", "cloud", "hotaisle");
    b.name = "box";
    b.pricePerHour = 6.0;
    b.minMinutes = 1;
    b.provisionedAt = "2026-01-05T10:00:00Z";
    const auto box = venues.addBox(b);
    crosslab::store::NewRun nr;
    nr.name = "70b-lora";
    const auto run = lab.runs().requestCreate(nr);
    lab.runs().requestStatus(run, crosslab::train::RunStatus::Running);
    const double t0 = *crosslab::venues::parseUtc(b.provisionedAt);
    LifeRecorder rec(lab);
    const auto w = rec.workStarted(box, WorkKind::Train, "70b-lora", t0 + 600, {run, std::nullopt});
    QCOMPARE(*rec.openWorkForRun(run), w);
    rec.workEnded(w, WorkStatus::Failed, t0 + 600 + 40 * 60, "silent for 40 min");
    QVERIFY(!rec.openWorkForRun(run));
    lab.runs().requestStatus(run, crosslab::train::RunStatus::Failed, "silent for 40 min");
    const auto offer = log.suggestFromRun(run);
    QVERIFY(offer);
    QCOMPARE(*offer->minutes, 40.0);
    QCOMPARE(*offer->usd, 4.0);
    QCOMPARE(offer->cause, std::string("silent for 40 min"));
    QCOMPARE(offer->box, std::string("box"));
    QCOMPARE(*offer->runId, run);
    const auto alert = log.suggestFromWatchdog(run, "no step for 40 min");
    QCOMPARE(alert->cause, std::string("no step for 40 min"));
    venues.endBox(box, "deleted", t0 + 3600);
    const auto lifeOffer = log.suggestFromBoxLife(box);
    QVERIFY(lifeOffer);
    QCOMPARE(*lifeOffer->minutes, 40.0);  // the failed run; no work after it, so the rest is idle
    // Both offers are open until an entry takes them.
    QCOMPARE(log.openSuggestions().size(), size_t{2});
    log.requestAdd(*offer);
    const auto open = log.openSuggestions();
    QCOMPARE(open.size(), size_t{1});
    QCOMPARE(*open[0].boxId, box);
  }
};

QTEST_GUILESS_MAIN(TestLedgerIo)
#include "test_ledger_io.moc"
