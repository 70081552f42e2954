// What Apache Avro's Java reference implementation finds about goaicore's schemas.
//
// Run as a single source file (no build step), with Avro's jars on the classpath:
//   java -cp <avro jars> AvroReference.java < plan
// The plan names one schema file a line: "<record name> <label> <path>" (tab-separated).
// For each file it prints the fingerprint Avro computes:
//   fingerprint <name> <label> <SchemaNormalization.parsingFingerprint64, signed decimal>
// and for every ordered pair of files of the same record, reader then writer:
//   compat <name> <reader label> <writer label> COMPATIBLE|INCOMPATIBLE [<type>@<location> ...]
// as SchemaCompatibility.checkReaderWriterCompatibility finds it. Fields are tab-separated.

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.SchemaCompatibility;
import org.apache.avro.SchemaNormalization;

public class AvroReference {
  public static void main(String[] args) throws Exception {
    Map<String, List<String[]>> byName = new LinkedHashMap<>();
    Map<String, Schema> parsed = new LinkedHashMap<>();
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    StringBuilder out = new StringBuilder();
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      if (line.isEmpty()) continue;
      String[] entry = line.split("\t", 3);
      // Each file is parsed on its own: its named types are its own.
      Schema schema = new Schema.Parser().parse(new File(entry[2]));
      parsed.put(entry[0] + "\t" + entry[1], schema);
      byName.computeIfAbsent(entry[0], k -> new ArrayList<>()).add(entry);
      out.append("fingerprint\t").append(entry[0]).append('\t').append(entry[1]).append('\t')
          .append(SchemaNormalization.parsingFingerprint64(schema)).append('\n');
    }
    for (Map.Entry<String, List<String[]>> group : byName.entrySet()) {
      String name = group.getKey();
      for (String[] reader : group.getValue()) {
        for (String[] writer : group.getValue()) {
          SchemaCompatibility.SchemaPairCompatibility pair =
              SchemaCompatibility.checkReaderWriterCompatibility(
                  parsed.get(name + "\t" + reader[1]), parsed.get(name + "\t" + writer[1]));
          SchemaCompatibility.SchemaCompatibilityResult result = pair.getResult();
          out.append("compat\t").append(name).append('\t').append(reader[1]).append('\t')
              .append(writer[1]).append('\t').append(result.getCompatibility());
          LinkedHashSet<String> found = new LinkedHashSet<>();
          for (SchemaCompatibility.Incompatibility incompatibility : result.getIncompatibilities()) {
            found.add(incompatibility.getType() + "@" + incompatibility.getLocation());
          }
          for (String item : found) out.append('\t').append(item);
          out.append('\n');
        }
      }
    }
    System.out.print(out);
  }
}
