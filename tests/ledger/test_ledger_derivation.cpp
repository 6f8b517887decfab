// The ledger's derivation on crafted lives (billing rules, overlapping work, a failed
// run followed by a good one, work running past the life's end, a live box) and the
// typed recorder that writes a life as crosslab lives it.
#include <QtTest>

#include "core/ledger/derivation.h"
#include "core/ledger/lab_ledger.h"
#include "core/ledger/life_recorder.h"
#include "core/store/lab_store.h"
#include "core/venues/meter.h"
#include "core/venues/venue_store.h"

using namespace crosslab::ledger;
using crosslab::store::LabStore;

namespace {

constexpr double kMin = 60.0;  // seconds

WorkItem work(WorkKind kind, double startMin, std::optional<double> endMin, WorkStatus status) {
  WorkItem w;
  w.kind = kind;
  w.name = std::string(toString(kind));
  w.start = startMin * kMin;
  if (endMin) w.end = *endMin * kMin;
  w.status = status;
  return w;
}

BoxLife life(double pricePerHour, int minMinutes, std::optional<double> deletedMin) {
  BoxLife l;
  l.box = "BOX-1";
  l.pricePerHour = pricePerHour;
  l.minMinutes = minMinutes;
  l.provisioned = 0;
  if (deletedMin) l.deleted = *deletedMin * kMin;
  return l;
}

void checkAddsUp(const LifeLedger& l) {
  const auto& m = l.minutes;
  QVERIFY2(std::abs(m.compute + m.staging + m.debug + m.idle - m.billed) < 1e-9, "minutes add up to billed");
  const auto& u = l.usd;
  QVERIFY2(std::abs(u.compute + u.staging + u.debug + u.idle - u.billed) < 1e-9, "usd add up to billed_usd");
}

}  // namespace

class TestLedgerDerivation : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;

 private slots:
  void billingAppliesTheMinimumAndRoundsUpToTheMinute() {
    // 50 min 20 s on a 1-minute-minimum box at $2.99/h: billed 51 minutes.
    BoxLife l = life(2.99, 1, std::nullopt);
    l.deleted = 50 * kMin + 20;
    auto r = derive(l, 0);
    QCOMPARE(r.minutes.billed, 51.0);
    QVERIFY(std::abs(r.minutes.used - (50 + 20.0 / 60)) < 1e-9);
    QVERIFY(std::abs(r.usd.billed - 51 * 2.99 / 60) < 1e-12);
    QCOMPARE(r.minutes.idle, 51.0);  // no work: all idle, the unused part of the minute included
    QVERIFY(!r.ratio);
    QCOMPARE(QString::fromStdString(formatRatio(r.ratio)), QString::fromUtf8("\u2014"));
    checkAddsUp(r);

    // 10 minutes on a 60-minute-minimum box: billed the hour, 50 idle minutes of minimum.
    l = life(5.98, 60, 10);
    l.work.push_back(work(WorkKind::Train, 2, 8, WorkStatus::Finished));
    r = derive(l, 0);
    QCOMPARE(r.minutes.billed, 60.0);
    QCOMPARE(r.minutes.compute, 6.0);
    QCOMPARE(r.minutes.staging, 2.0);
    QCOMPARE(r.minutes.idle, 2.0 + 50.0);
    QCOMPARE(r.usd.billed, 5.98);
    checkAddsUp(r);

    // A whole number of minutes is not rounded up; the meter uses the same rule.
    const auto m = crosslab::venues::meterReading(2.99, 1, 0, 120 * kMin + 1);
    QCOMPARE(m.billedHours * 60, 121.0);
  }

  void overlappingWorkAFailedRunAndItsGap() {
    // $6/h = $0.10 a minute; a life of 100 minutes.
    BoxLife l = life(6.0, 1, 100);
    l.work.push_back(work(WorkKind::Train, 10, 50, WorkStatus::Failed));     // the dead run
    l.work.push_back(work(WorkKind::Train, 60, 70, WorkStatus::Finished));   // the good one
    l.work.push_back(work(WorkKind::Bench, 65, 80, WorkStatus::Finished));   // overlaps it
    l.work.push_back(work(WorkKind::Serve, 5, 95, WorkStatus::Finished));    // a server is not work
    const auto r = derive(l, 0);
    QCOMPARE(r.minutes.compute, 20.0);        // [60, 80], the overlap counted once
    QCOMPARE(r.minutes.debug, 40.0 + 10.0);   // the failed run and the gap to the next work
    QCOMPARE(r.minutes.staging, 10.0);        // [0, 10]
    QCOMPARE(r.minutes.idle, 20.0);           // [80, 100]
    QCOMPARE(r.usd.compute, 2.0);
    QCOMPARE(r.usd.debug, 5.0);
    QVERIFY(std::abs(r.usd.staging - 1.0) < 1e-12);
    QCOMPARE(*r.ratio, 3.0);
    QCOMPARE(QString::fromStdString(formatRatio(r.ratio)), QString("3:1"));
    checkAddsUp(r);

    // A failed item overlapped by a finished one: the overlap is compute; no later work, no gap.
    BoxLife o = life(6.0, 1, 60);
    o.work.push_back(work(WorkKind::Train, 10, 20, WorkStatus::Stalled));
    o.work.push_back(work(WorkKind::Train, 15, 40, WorkStatus::Finished));
    const auto ro = derive(o, 0);
    QCOMPARE(ro.minutes.compute, 25.0);
    QCOMPARE(ro.minutes.debug, 5.0);
    QCOMPARE(ro.minutes.staging, 10.0);
    QCOMPARE(ro.minutes.idle, 20.0);
    checkAddsUp(ro);
  }

  void workRunningPastTheLifeAndALiveBox() {
    // Work that ends after the box was deleted counts up to the deletion.
    BoxLife l = life(3.0, 1, 30);
    l.work.push_back(work(WorkKind::Train, 10, 45, WorkStatus::Finished));
    l.work.push_back(work(WorkKind::Eval, 50, 55, WorkStatus::Finished));  // wholly after: dropped
    auto r = derive(l, 0);
    QCOMPARE(r.minutes.compute, 20.0);
    QCOMPARE(r.minutes.staging, 10.0);
    QCOMPARE(r.minutes.idle, 0.0);
    checkAddsUp(r);

    // A live box, 30 minutes in, a training run still going: compute so far, no idle.
    BoxLife live = life(3.0, 60, std::nullopt);
    live.work.push_back(work(WorkKind::Train, 12, std::nullopt, WorkStatus::Running));
    r = derive(live, 30 * kMin);
    QCOMPARE(r.minutes.used, 30.0);
    QCOMPARE(r.minutes.compute, 18.0);
    QCOMPARE(r.minutes.staging, 12.0);
    QCOMPARE(r.minutes.idle, 30.0);  // the rest of the 60-minute minimum
    QCOMPARE(r.end, 30 * kMin);
    checkAddsUp(r);

    // The same run never seen to finish on a deleted box is debug.
    live.deleted = 30 * kMin;
    r = derive(live, 99 * kMin);
    QCOMPARE(r.minutes.compute, 0.0);
    QCOMPARE(r.minutes.debug, 18.0);
    QVERIFY(!r.ratio);
  }

  void ratiosTheLabsWay() {
    QCOMPARE(QString::fromStdString(formatRatio(1.85 / 0.44)), QString("4:1"));
    QCOMPARE(QString::fromStdString(formatRatio(3.40 / 0.10)), QString("34:1"));
    QCOMPARE(QString::fromStdString(formatRatio(4.0 / 9.0)), QString("0.4:1"));
    QCOMPARE(QString::fromStdString(formatRatio(1.50 / 0.80)), QString("2:1"));
    QCOMPARE(QString::fromStdString(formatRatio(0.04)), QString("0.04:1"));
  }

  void transfersHaveRatesAndForecastTheNextLife() {
    BoxLife l = life(2.99, 1, 60);
    Transfer pull;
    pull.direction = Direction::Pull;
    pull.what = "weights";
    pull.bytes = 16'060'000'000;
    pull.start = 0;
    pull.end = 100;
    l.transfers.push_back(pull);
    QCOMPARE(*l.transfers[0].mbPerSecond(), 160.6);
    Transfer instant = pull;
    instant.end = instant.start;
    QVERIFY(!instant.mbPerSecond());
    const auto f = forecastStaging(l, 5.98);
    QCOMPARE(f.bytes, std::int64_t{16'060'000'000});
    QVERIFY(std::abs(f.minutes - 100.0 / 60) < 1e-12);
    QVERIFY(std::abs(f.usd - 100.0 / 60 * 5.98 / 60) < 1e-12);
  }

  void recorderWritesALifeAsItHappens() {
    auto lab = LabStore::create(tmp_.path().toStdString() + "/rec", "rec");
    crosslab::venues::VenueStore venues(lab);
    crosslab::venues::BoxRow b;
    b.venueId = venues.ensureVenue("hotaisle", "cloud", "hotaisle");
    b.name = "mi300x";
    b.pricePerHour = 6.0;
    b.minMinutes = 1;
    b.provisionedAt = "2026-11-29T10:00:00Z";
    const auto box = venues.addBox(b);
    const double t0 = *crosslab::venues::parseUtc(b.provisionedAt);
    LifeRecorder rec(lab);
    rec.ready(box, t0 + 60);
    rec.transfer(box, Direction::Push, "weights", 120'000'000, t0 + 60, t0 + 180.5);
    const auto failed = rec.workStarted(box, WorkKind::Train, "8b-lora", t0 + 5 * kMin, {});
    QVERIFY(rec.workEnded(failed, WorkStatus::Failed, t0 + 15 * kMin, "tokenizer missing"));
    QVERIFY(!rec.workEnded(failed, WorkStatus::Finished, t0 + 16 * kMin));  // ended once
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rec.workEnded(failed, WorkStatus::Running, t0));
    const auto good = rec.workStarted(box, WorkKind::Train, "8b-lora", t0 + 20 * kMin, {});
    QVERIFY(rec.workEnded(good, WorkStatus::Finished, t0 + 30 * kMin));
    const auto serve = rec.serveStarted(box, "vllm", t0 + 31 * kMin);
    const auto sweep = rec.workStarted(box, WorkKind::Bench, "sweep 1,8", t0 + 32 * kMin);
    QVERIFY(rec.workEnded(sweep, WorkStatus::Finished, t0 + 35 * kMin));
    const auto dangling = rec.workStarted(box, WorkKind::Eval, "eval", t0 + 36 * kMin);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rec.workStarted(box, WorkKind::Serve, "x", t0));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, rec.workStarted(999, WorkKind::Train, "x", t0));

    // The meter and the ledger read the same derivation.
    const auto meterBefore = venues.meter(*venues.activeBox("mi300x"), t0 + 40 * kMin);
    QCOMPARE(meterBefore.billedHours * 60, 40.0);

    // The life ends where every life ends (VenueStore::endBox), which books it through the ledger.
    const auto end = venues.endBox(box, "deleted", t0 + 40 * kMin);
    QVERIFY(end.endedNow);
    QVERIFY(!venues.endBox(box, "deleted", t0 + 50 * kMin).endedNow);  // a life is booked once
    const auto booked = readLedger(lab, t0 + 99 * kMin).lives.at(0).ledger;
    QCOMPARE(end.usd, booked.usd.billed);  // the meter and the ledger agree
    QVERIFY(!rec.serveStopped(serve, t0 + 41 * kMin));  // closed with the life
    QCOMPARE(booked.minutes.compute, 13.0);             // [20,30] + [32,35]
    QCOMPARE(booked.minutes.debug, 10.0 + 5.0 + 4.0);   // failed + gap to the next + eval never finished
    QCOMPARE(booked.minutes.staging, 5.0 + 2.0 + 1.0);  // [0,5] + [30,32] + [35,36]
    QCOMPARE(booked.minutes.idle, 0.0);                 // the eval ran to the end
    QCOMPARE(lab.db().scalarText("SELECT status || ':' || reason FROM box_work WHERE id = " + std::to_string(dangling)),
             std::string("stopped:box deleted"));

    const auto types = [&] {
      QStringList out;
      auto st = lab.db().prepare("SELECT type FROM events WHERE box_id = ? ORDER BY id");
      st.bind(1, box);
      while (st.step()) out << QString::fromStdString(st.text(0));
      return out;
    }();
    QCOMPARE(types, QStringList({"life.provisioned", "life.ready", "life.transfer", "life.work_start", "life.work_end",
                                 "life.work_start", "life.work_end", "life.serve_start", "life.work_start",
                                 "life.work_end", "life.work_start", "life.deleted"}));

    const auto ledger = readLedger(lab, t0 + 99 * kMin);
    QCOMPARE(ledger.lives.size(), size_t{1});
    const auto& row = ledger.lives[0];
    QCOMPARE(row.life.provider, std::string("hotaisle"));
    QCOMPARE(row.life.transfers.size(), size_t{1});
    QCOMPARE(row.life.transfers[0].end - row.life.transfers[0].start, 120.5);  // sub-second times kept
    QCOMPARE(row.ledger.minutes.billed, 40.0);
    QCOMPARE(ledger.totals.minutes.compute, 13.0);

    // Other spend and credits are in the totals, not in any life.
    requestAddOtherSpend(lab, "api", 3.0, "judge + embeddings");
    requestAddCredit(lab, 100.0, "vendor credit");
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, requestAddOtherSpend(lab, "compute", 1.0, "x"));
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, requestAddCredit(lab, -1.0, "x"));
    const auto again = readLedger(lab, t0 + 99 * kMin);
    QCOMPARE(again.totals.otherUsd, 3.0);
    QCOMPARE(again.totals.creditUsd, 100.0);
    QCOMPARE(again.totals.usd.billed, 4.0);

    // A new life of the venue: the staging it will likely repeat.
    const auto f = stagingForecastFor(lab, "hotaisle", 6.0);
    QVERIFY(f);
    QCOMPARE(f->bytes, std::int64_t{120'000'000});
    QVERIFY(!stagingForecastFor(lab, "elsewhere", 6.0));
  }
};

QTEST_GUILESS_MAIN(TestLedgerDerivation)
#include "test_ledger_derivation.moc"
