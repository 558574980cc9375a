/*
 * pulsarlab's conformance suite: run Apache Pulsar's own command-line tools (`pulsar-admin`,
 * `pulsar-client`; Maven artifact org.apache.pulsar:pulsar-client-tools) against any broker,
 * many commands in one JVM, and answer what each command printed and returned, as JSON.
 *
 * Run with Java's single-file source launcher, the CLI's resolved classpath first:
 *
 *   java -cp CLASSPATH AdminCli.java
 *
 * Then one request per line on stdin, one answer per line on stdout:
 *
 *   {"tool": "admin", "url": "http://127.0.0.1:8080", "args": ["tenants", "list"]}
 *   -> {"exit": 0, "out": "public\npulsar\n", "err": ""}
 *
 * "tool" is "admin" (`pulsar-admin --admin-url URL ARGS...`) or "client" (`pulsar-client
 * --url URL ARGS...`). Each command gets a fresh tool object (`PulsarAdminTool`,
 * `PulsarClientTool`: what the scripts' main() builds), so the CLI's parsing, its calls through
 * the Java admin library and its output formatting are Pulsar's own; the command's stdout and
 * stderr are captured. Exit status as main() would end with: 0 or 1; 124 when a command did
 * not finish within the time limit. End of stdin ends the JVM.
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

public class AdminCli {

    /** How long one command may take before it is reported as timed out. */
    static final long COMMAND_TIMEOUT_SECONDS = 60;
    static final int TIMED_OUT = 124;

    static final String ADMIN = "org.apache.pulsar.admin.cli.PulsarAdminTool";
    static final String CLIENT = "org.apache.pulsar.client.cli.PulsarClientTool";

    /** Run one command line on a new tool object; its exit status as main() would end. */
    static int call(String className, String url, String[] args) throws Exception {
        Class<?> cls = Class.forName(className);
        // client.conf's keys too: a few commands build their admin from these, not --admin-url
        Properties conf = new Properties();
        conf.setProperty(className.equals(ADMIN) ? "webServiceUrl" : "brokerServiceUrl", url);
        Object tool = cls.getConstructor(Properties.class).newInstance(conf);
        Method run = cls.getDeclaredMethod("run", String[].class);
        run.setAccessible(true);  // PulsarAdminTool.run is protected (its main() calls it)
        try {
            Object result = run.invoke(tool, (Object) args);
            // PulsarAdminTool.run answers a boolean (true = success), PulsarClientTool.run
            // an exit code
            return result instanceof Boolean ok ? (ok ? 0 : 1) : (Integer) result;
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            System.err.println(cause.getClass().getName() + ": " + cause.getMessage());
            return 1;
        } finally {
            closeAdmin(tool);
        }
    }

    /** Close the PulsarAdmin (its HTTP client) a PulsarAdminTool built, if it built one. */
    static void closeAdmin(Object tool) {
        try {
            Object supplier = tool.getClass().getMethod("getPulsarAdminSupplier").invoke(tool);
            if (supplier instanceof Supplier<?> s && s.get() instanceof AutoCloseable c) {
                c.close();
            }
        } catch (Exception | LinkageError e) {
            // PulsarClientTool has no admin; an admin that cannot be built has nothing to close
        }
    }

    public static void main(String[] argv) throws Exception {
        ObjectMapper json = new ObjectMapper();
        PrintStream realOut = System.out;
        PrintStream realErr = System.err;
        BufferedReader in = new BufferedReader(
                new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String request;
        while ((request = in.readLine()) != null) {
            if (request.isBlank()) {
                continue;
            }
            JsonNode req = json.readTree(request);
            boolean isAdmin = req.get("tool").asText().equals("admin");
            String url = req.get("url").asText();
            List<String> words = new ArrayList<>(List.of(isAdmin ? "--admin-url" : "--url", url));
            req.get("args").forEach(w -> words.add(w.asText()));
            String[] args = words.toArray(new String[0]);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int exit;
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            FutureTask<Integer> task = new FutureTask<>(() -> call(isAdmin ? ADMIN : CLIENT, url, args));
            Thread worker = new Thread(task, "pulsar-cli-command");
            worker.setDaemon(true);
            try {
                worker.start();
                exit = task.get(COMMAND_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                exit = TIMED_OUT;
            } finally {
                System.setOut(realOut);
                System.setErr(realErr);
            }
            ObjectNode answer = json.createObjectNode();
            answer.put("exit", exit);
            answer.put("out", out.toString(StandardCharsets.UTF_8));
            answer.put("err", err.toString(StandardCharsets.UTF_8));
            realOut.println(json.writeValueAsString(answer));
            realOut.flush();
        }
        // a timed-out command may have left client threads behind: end without waiting
        Runtime.getRuntime().halt(0);
    }
}
