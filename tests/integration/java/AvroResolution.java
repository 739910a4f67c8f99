// The oracle of test_avro_java_differential.py: Apache Avro Java's own decoding of Avro bodies
// written with one schema and read with another, GenericDatumReader(writer, reader) (Avro's schema
// resolution, ResolvingDecoder), on the avro jar PySpark ships. Compiled at test time with javac
// against PySpark's jars and loaded into the test session's Spark JVM, where py4j calls
// decode(String) once for a whole batch of schema pairs.
//
// Input (JSON): [{"writer": "<schema JSON>", "reader": "<schema JSON>", "bodies": ["<base64>"...]}...]
// Output (JSON): per pair, per body: {"value": <typed>} or {"error": "<exception>"}; a pair whose
// schemas do not parse: {"schema_error": "<exception>"}. Typed values follow the reader schema:
// null, true/false, int and long as JSON integers, float and double as their IEEE bits
// ({"f": bits} / {"d": bits}), string as text, bytes and fixed as hex, an enum as its symbol, a
// record as an object of its fields, an array as a list, a map as an object, a union's value as
// [branch index in the reader's union, value]. Logical types are left as their base type's value.

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.util.Base64;
import java.util.Collection;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericEnumSymbol;
import org.apache.avro.generic.GenericFixed;
import org.apache.avro.generic.IndexedRecord;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.DecoderFactory;

public class AvroResolution {
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    public static String decode(String input) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        JsonNode pairs = mapper.readTree(input);
        StringWriter text = new StringWriter();
        JsonGenerator out = new JsonFactory().createGenerator(text);
        out.writeStartArray();
        BinaryDecoder decoder = null;
        for (JsonNode pair : pairs) {
            Schema writer;
            Schema reader;
            try {
                writer = new Schema.Parser().parse(pair.get("writer").asText());
                reader = new Schema.Parser().parse(pair.get("reader").asText());
            } catch (Exception e) {
                out.writeStartObject();
                out.writeStringField("schema_error", e.toString());
                out.writeEndObject();
                continue;
            }
            GenericDatumReader<Object> datums = new GenericDatumReader<>(writer, reader);
            out.writeStartArray();
            for (JsonNode body : pair.get("bodies")) {
                byte[] bytes = Base64.getDecoder().decode(body.asText());
                decoder = DecoderFactory.get().binaryDecoder(bytes, decoder);
                Object value;
                try {
                    value = datums.read(null, decoder);
                } catch (Exception | StackOverflowError e) {
                    out.writeStartObject();
                    out.writeStringField("error", e.toString());
                    out.writeEndObject();
                    continue;
                }
                out.writeStartObject();
                out.writeFieldName("value");
                write(out, reader, value);
                out.writeEndObject();
            }
            out.writeEndArray();
        }
        out.writeEndArray();
        out.close();
        return text.toString();
    }

    private static void write(JsonGenerator out, Schema schema, Object value) throws Exception {
        switch (schema.getType()) {
            case NULL:
                out.writeNull();
                break;
            case BOOLEAN:
                out.writeBoolean((Boolean) value);
                break;
            case INT:
                out.writeNumber((Integer) value);
                break;
            case LONG:
                out.writeNumber((Long) value);
                break;
            case FLOAT:
                out.writeStartObject();
                out.writeNumberField("f", Float.floatToRawIntBits((Float) value));
                out.writeEndObject();
                break;
            case DOUBLE:
                out.writeStartObject();
                out.writeNumberField("d", Double.doubleToRawLongBits((Double) value));
                out.writeEndObject();
                break;
            case STRING:
                out.writeString(value.toString());
                break;
            case BYTES:
                ByteBuffer buffer = ((ByteBuffer) value).duplicate();
                byte[] bytes = new byte[buffer.remaining()];
                buffer.get(bytes);
                out.writeString(hex(bytes));
                break;
            case FIXED:
                out.writeString(hex(((GenericFixed) value).bytes()));
                break;
            case ENUM:
                out.writeString(((GenericEnumSymbol<?>) value).toString());
                break;
            case RECORD:
                IndexedRecord record = (IndexedRecord) value;
                out.writeStartObject();
                for (Schema.Field field : schema.getFields()) {
                    out.writeFieldName(field.name());
                    write(out, field.schema(), record.get(field.pos()));
                }
                out.writeEndObject();
                break;
            case ARRAY:
                out.writeStartArray();
                for (Object item : (Collection<?>) value) {
                    write(out, schema.getElementType(), item);
                }
                out.writeEndArray();
                break;
            case MAP:
                out.writeStartObject();
                for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
                    out.writeFieldName(entry.getKey().toString());
                    write(out, schema.getValueType(), entry.getValue());
                }
                out.writeEndObject();
                break;
            case UNION:
                int branch = GenericData.get().resolveUnion(schema, value);
                out.writeStartArray();
                out.writeNumber(branch);
                write(out, schema.getTypes().get(branch), value);
                out.writeEndArray();
                break;
            default:
                throw new IllegalArgumentException("unknown type " + schema);
        }
    }

    private static String hex(byte[] bytes) {
        char[] text = new char[bytes.length * 2];
        for (int i = 0; i < bytes.length; i++) {
            text[2 * i] = HEX[(bytes[i] >> 4) & 15];
            text[2 * i + 1] = HEX[bytes[i] & 15];
        }
        return new String(text);
    }
}
