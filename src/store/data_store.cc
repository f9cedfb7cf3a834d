// The shared-data-loader half of RunStore (declared in run_store.h): each
// run's loaders and their consumers (schema version 4).
#include <fmt/format.h>
#include <sqlite3.h>

#include "store/run_store.h"

namespace colo {

Status RunStore::add_data_loader(int64_t run_id, const DataLoaderRow& l) {
  auto tx = Transaction::begin(db_.get(), path_);
  if (!tx.ok()) return tx.error().with_context("recording data loader " + l.name);
  auto loader = Statement::prepare(db_.get(), path_, R"sql(
      INSERT INTO data_loaders (run_id, name, path, format, pid, threads, ring_bytes,
                                dataset_size, wall_ms, cpu_ms, peak_rss_bytes, samples_decoded,
                                decode_errors, note)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14))sql");
  if (!loader.ok()) return loader.error();
  Status s = loader->bind(1, run_id)
                 .bind(2, l.name)
                 .bind(3, l.path)
                 .bind(4, l.format)
                 .bind(5, l.pid)
                 .bind(6, l.threads)
                 .bind(7, l.ring_bytes)
                 .bind(8, l.dataset_size)
                 .bind(9, l.wall_ms)
                 .bind(10, l.cpu_ms)
                 .bind(11, l.peak_rss_bytes)
                 .bind(12, l.samples_decoded)
                 .bind(13, l.decode_errors)
                 .bind(14, l.note)
                 .run();
  if (!s.ok()) return s.error().with_context("recording data loader " + l.name);
  const int64_t loader_id = sqlite3_last_insert_rowid(db_.get());
  auto consumer = Statement::prepare(db_.get(), path_, R"sql(
      INSERT INTO data_consumers (loader_id, job_id, job_name, pid, batch_size, duration_ms,
                                  samples, batches, epochs, wait_ms, pending_ms, held_back_ms,
                                  detached)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13))sql");
  if (!consumer.ok()) return consumer.error();
  for (const DataConsumerRow& c : l.consumers) {
    s = consumer->bind(1, loader_id)
            .bind(2, c.job_id)
            .bind(3, c.job_name)
            .bind(4, c.pid)
            .bind(5, c.batch_size)
            .bind(6, c.duration_ms)
            .bind(7, c.samples)
            .bind(8, c.batches)
            .bind(9, c.epochs)
            .bind(10, c.wait_ms)
            .bind(11, c.pending_ms)
            .bind(12, c.held_back_ms)
            .bind(13, c.detached)
            .run();
    if (!s.ok()) return s.error().with_context("recording a consumer of data loader " + l.name);
  }
  return tx->commit();
}

Result<std::vector<DataLoaderRow>> RunStore::data_loaders(int64_t run_id) {
  auto loaders = Statement::prepare(db_.get(), path_, R"sql(
      SELECT id, name, path, format, pid, threads, ring_bytes, dataset_size, wall_ms, cpu_ms,
             peak_rss_bytes, samples_decoded, decode_errors, note
        FROM data_loaders WHERE run_id = ?1 ORDER BY id)sql");
  if (!loaders.ok()) return loaders.error();
  loaders->bind(1, run_id);
  std::vector<DataLoaderRow> out;
  Status read = loaders->for_each_row([&]() -> Status {
    DataLoaderRow l;
    l.id = loaders->int64_at(0);
    l.name = loaders->text_at(1);
    l.path = loaders->text_at(2);
    l.format = loaders->text_at(3);
    l.pid = loaders->opt_int64_at(4);
    l.threads = loaders->opt_int64_at(5);
    l.ring_bytes = loaders->opt_int64_at(6);
    l.dataset_size = loaders->opt_int64_at(7);
    l.wall_ms = loaders->opt_int64_at(8);
    l.cpu_ms = loaders->opt_int64_at(9);
    l.peak_rss_bytes = loaders->opt_int64_at(10);
    l.samples_decoded = loaders->opt_int64_at(11);
    l.decode_errors = loaders->opt_int64_at(12);
    l.note = loaders->text_at(13);
    out.push_back(std::move(l));
    return OkStatus();
  });
  if (!read.ok()) return read.error();
  auto consumers = Statement::prepare(db_.get(), path_, R"sql(
      SELECT job_id, job_name, pid, batch_size, duration_ms, samples, batches, epochs, wait_ms,
             pending_ms, held_back_ms, detached
        FROM data_consumers WHERE loader_id = ?1 ORDER BY rowid)sql");
  if (!consumers.ok()) return consumers.error();
  for (DataLoaderRow& l : out) {
    consumers->reset();
    consumers->bind(1, l.id);
    Status read = consumers->for_each_row([&]() -> Status {
      DataConsumerRow c;
      c.job_id = consumers->opt_int64_at(0);
      c.job_name = consumers->text_at(1);
      c.pid = consumers->int64_at(2);
      c.batch_size = consumers->int64_at(3);
      c.duration_ms = consumers->int64_at(4);
      c.samples = consumers->int64_at(5);
      c.batches = consumers->int64_at(6);
      c.epochs = consumers->int64_at(7);
      c.wait_ms = consumers->int64_at(8);
      c.pending_ms = consumers->int64_at(9);
      c.held_back_ms = consumers->int64_at(10);
      c.detached = consumers->text_at(11);
      l.consumers.push_back(std::move(c));
      return OkStatus();
    });
    if (!read.ok()) return read.error();
  }
  return out;
}

}  // namespace colo
