// WcJob: the word count of bench_flink_wc on Apache Flink (DataStream API),
// written as a Flink user would: a file source of lines, a flatMap that
// splits on single spaces (empty tokens skipped), keyBy(word), a
// KeyedProcessFunction that keeps each word's count in ValueState and emits
// (word, count) per word, into a discarding sink.
//   java -cp "<pyflink>/lib/*:wc.jar" WcJob MODE INPUT PARALLELISM CHECKPOINT_DIR
// MODE: none (no checkpoints), heap (HashMap state) or rocksdb (incremental),
// the last two with a checkpoint every second into CHECKPOINT_DIR.
// Prints one line: "net_ms <the job's net run time>" (without the JVM's and
// the mini cluster's start).
//   flink run -c WcJob wc.jar MODE INPUT PARALLELISM CHECKPOINT_DIR MARKER_DIR
// submits the job to a running cluster and prints "job_id <id>" without
// waiting for its end (bench/flink/recovery.py). Each counter of a restarted
// attempt writes, at its first element, MARKER_DIR/first-<attempt>-<subtask>
// holding the wall-clock time in ms: the restarted job's first output.
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.concurrent.TimeUnit;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.connector.file.src.FileSource;
import org.apache.flink.connector.file.src.reader.TextLineInputFormat;
import org.apache.flink.core.fs.Path;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.util.Collector;

public class WcJob {
  public static final class Split implements FlatMapFunction<String, String> {
    @Override
    public void flatMap(String line, Collector<String> out) {
      int from = 0;
      final int n = line.length();
      while (from < n) {
        int to = line.indexOf(' ', from);
        if (to < 0) to = n;
        if (to > from) out.collect(line.substring(from, to));
        from = to + 1;
      }
    }
  }

  public static final class Count extends KeyedProcessFunction<String, String, Tuple2<String, Long>> {
    private final String markers;  // null: no markers
    private transient ValueState<Long> count;
    private transient boolean marked;

    Count(String markerDir) {
      markers = markerDir;
    }

    @Override
    public void open(org.apache.flink.api.common.functions.OpenContext ctx) {
      count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
      marked = markers == null || getRuntimeContext().getTaskInfo().getAttemptNumber() == 0;
    }

    /// The first element of a restarted attempt: its time, for recovery.py.
    private void mark() throws IOException {
      marked = true;
      final long now = System.currentTimeMillis();
      final var info = getRuntimeContext().getTaskInfo();
      final var name = "first-" + info.getAttemptNumber() + "-" + info.getIndexOfThisSubtask();
      Files.write(Paths.get(markers, name + ".tmp"), Long.toString(now).getBytes(StandardCharsets.US_ASCII));
      Files.move(Paths.get(markers, name + ".tmp"), Paths.get(markers, name));
    }

    @Override
    public void processElement(String word, Context ctx, Collector<Tuple2<String, Long>> out) throws Exception {
      if (!marked) mark();
      Long c = count.value();
      long next = c == null ? 1 : c + 1;
      count.update(next);
      out.collect(Tuple2.of(word, next));
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 4 && args.length != 5) {
      System.err.println("usage: WcJob none|heap|rocksdb INPUT PARALLELISM CHECKPOINT_DIR [MARKER_DIR]");
      System.exit(2);
    }
    final String mode = args[0];
    if (!mode.equals("none") && !mode.equals("heap") && !mode.equals("rocksdb")) {
      System.err.println("unknown mode '" + mode + "' (none, heap or rocksdb)");
      System.exit(2);
    }
    final Configuration conf = new Configuration();
    if (!mode.equals("none")) {
      conf.setString("execution.checkpointing.interval", "1s");
      conf.setString("execution.checkpointing.storage", "filesystem");
      conf.setString("execution.checkpointing.dir", "file://" + args[3]);
      conf.setString("state.backend.type", mode.equals("rocksdb") ? "rocksdb" : "hashmap");
      if (mode.equals("rocksdb")) conf.setString("execution.checkpointing.incremental", "true");
    }
    final StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
    env.setParallelism(Integer.parseInt(args[2]));
    final FileSource<String> source =
        FileSource.forRecordStreamFormat(new TextLineInputFormat(), new Path(args[1])).build();
    env.fromSource(source, WatermarkStrategy.noWatermarks(), "lines")
        .flatMap(new Split())
        .returns(Types.STRING)
        .keyBy(w -> w)
        .process(new Count(args.length == 5 ? args[4] : null))
        .returns(Types.TUPLE(Types.STRING, Types.LONG))
        .sinkTo(new DiscardingSink<>());
    if (args.length == 5) {
      final JobClient job = env.executeAsync("wc " + mode);
      System.out.println("job_id " + job.getJobID());
      return;
    }
    final JobExecutionResult r = env.execute("wc " + mode);
    System.out.println("net_ms " + r.getNetRuntime(TimeUnit.MILLISECONDS));
  }
}
