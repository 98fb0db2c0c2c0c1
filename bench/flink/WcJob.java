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
import java.util.concurrent.TimeUnit;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
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
    private transient ValueState<Long> count;

    @Override
    public void open(org.apache.flink.api.common.functions.OpenContext ctx) {
      count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
    }

    @Override
    public void processElement(String word, Context ctx, Collector<Tuple2<String, Long>> out) throws Exception {
      Long c = count.value();
      long next = c == null ? 1 : c + 1;
      count.update(next);
      out.collect(Tuple2.of(word, next));
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 4) {
      System.err.println("usage: WcJob none|heap|rocksdb INPUT PARALLELISM CHECKPOINT_DIR");
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
        .process(new Count())
        .returns(Types.TUPLE(Types.STRING, Types.LONG))
        .sinkTo(new DiscardingSink<>());
    final JobExecutionResult r = env.execute("wc " + mode);
    System.out.println("net_ms " + r.getNetRuntime(TimeUnit.MILLISECONDS));
  }
}
