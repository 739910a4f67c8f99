// The oracle of test_avro_spark_types_oracle.py: spark-avro's own conversion of Avro schemas to
// Spark types (SchemaConverters.toSqlType, default options). Reads one Avro schema (JSON) per
// line on stdin and prints, per line, "<nullable> <Spark type as JSON>" or "ERROR <message>".
// Run as a single-file source program on the installed PySpark's jars plus spark-avro.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import org.apache.avro.Schema;
import org.apache.spark.sql.avro.SchemaConverters;

public class AvroSparkTypes {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            try {
                Schema schema = new Schema.Parser().parse(line);
                SchemaConverters.SchemaType converted = SchemaConverters.toSqlType(schema);
                System.out.println(converted.nullable() + " " + converted.dataType().json());
            } catch (Exception e) {
                System.out.println("ERROR " + e.getClass().getSimpleName());
            }
        }
    }
}
