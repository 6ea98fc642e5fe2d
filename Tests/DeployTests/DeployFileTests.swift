import Foundation
import TestSupport
import Testing
import Yams

/// deploy/: the files parse, and the ports, paths, environment variables and probes they name are flagsd's real
/// ones (read from `flagsd --help` and a live flagsd, not from a copied list). No Docker engine runs here: images
/// are not built.
struct DeployFileTests {
    static func yaml(_ path: String) throws -> [String: Any] {
        try #require(try Yams.load(yaml: try Repository.text(path)) as? [String: Any], "\(path) is not a YAML mapping")
    }

    /// `KEY=value` words of a Dockerfile ENV, systemd Environment= or env file line.
    static func assignments(_ text: String) -> [(String, String)] {
        matches(#"([A-Z][A-Z0-9_]*)=("[^"]*"|\S*)"#, in: text).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            return (parts[0], parts.count > 1 ? parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")) : "")
        }
    }

    // MARK: Dockerfile

    /// The instructions of a Dockerfile, continuation lines joined, comments dropped: (keyword, arguments, stage).
    static func dockerfile() throws -> [(keyword: String, arguments: String, stage: Int)] {
        var instructions: [(String, String, Int)] = []
        var pending = ""
        var stage = -1
        for rawLine in try Repository.text("deploy/Dockerfile").split(separator: "\n", omittingEmptySubsequences: false)
        {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if pending.isEmpty, line.hasPrefix("#") || line.isEmpty { continue }
            if line.hasSuffix("\\") {
                pending += line.dropLast() + " "
                continue
            }
            let whole = pending + line
            pending = ""
            let keyword = String(whole.prefix { !$0.isWhitespace }).uppercased()
            let arguments = whole.drop { !$0.isWhitespace }.trimmingCharacters(in: .whitespaces)
            if keyword == "FROM" { stage += 1 }
            instructions.append((keyword, arguments, stage))
        }
        return instructions
    }

    @Test func theDockerfileBuildsWithTheToolchainAndRunsSmallAsANonRootUser() async throws {
        let options = try await FlagsdOptions.read()
        let instructions = try Self.dockerfile()
        let froms = instructions.filter { $0.keyword == "FROM" }
        #expect(froms.count >= 2, "a multi-stage build")
        let buildStage = try #require(
            froms.first { $0.arguments.lowercased().hasSuffix(" as build") }, "a stage named build")
        #expect(buildStage.arguments.contains("SWIFT_IMAGE") || buildStage.arguments.contains("swift:"))
        let args = Dictionary(
            instructions.filter { $0.keyword == "ARG" }.compactMap { instruction -> (String, String)? in
                let parts = instruction.arguments.split(separator: "=", maxSplits: 1).map(String.init)
                return parts.count == 2 ? (parts[0], parts[1]) : nil
            }
        ) { first, _ in first }
        #expect(
            args["SWIFT_IMAGE"]?.hasPrefix("swift:") == true, "the build stage starts from the Swift toolchain image")
        #expect(args["RUNTIME_IMAGE"]?.contains("slim") == true, "the runtime stage starts from a slim image")

        let build = instructions.filter { $0.stage == buildStage.stage }
        let buildRuns = build.filter { $0.keyword == "RUN" }.map(\.arguments).joined(separator: "\n")
        #expect(
            buildRuns.contains("libsqlite3-dev") && buildRuns.contains("zlib1g-dev")
                && buildRuns.contains("libcurl4-openssl-dev"),
            "the package needs libsqlite3-dev and zlib1g-dev, and the static Foundation libcurl4-openssl-dev")
        #expect(buildRuns.contains("swift build -c release --product flagsd"))
        #expect(buildRuns.contains(".resources"), "the console's resource bundle must travel with the binary")

        let lastStage = froms.count - 1
        let runtime = instructions.filter { $0.stage == lastStage }
        let runtimeRuns = runtime.filter { $0.keyword == "RUN" }.map(\.arguments).joined(separator: "\n")
        #expect(runtimeRuns.contains("libsqlite3-0") && !runtimeRuns.contains("swift"), "runtime libraries only")
        let user = try #require(runtime.last { $0.keyword == "USER" }?.arguments, "the runtime stage names a USER")
        let uid = user.split(separator: ":").first.map(String.init) ?? user
        #expect(uid != "root" && uid != "0", "flagsd must not run as root")
        #expect(Int(uid) != nil, "a numeric user, so Kubernetes can check runAsNonRoot")

        // Binary, bundles and flag files where the entry point and variables say.
        let entrypoint = try #require(runtime.last { $0.keyword == "ENTRYPOINT" }?.arguments)
        let binary = try #require(matches(#"\["([^"]+)"#, in: entrypoint, group: 1).first)
        #expect(URL(fileURLWithPath: binary).lastPathComponent == "flagsd")
        let copies = runtime.filter { $0.keyword == "COPY" }.map(\.arguments)
        let binaryFolder = URL(fileURLWithPath: binary).deletingLastPathComponent().path + "/"
        #expect(
            copies.contains { $0.hasPrefix("--from=build") && $0.hasSuffix(" " + binaryFolder) },
            "the build output (flagsd and its .resources) goes to \(binaryFolder)")

        let environment = Dictionary(runtime.filter { $0.keyword == "ENV" }.flatMap { Self.assignments($0.arguments) })
        { _, new in new }
        for name in environment.keys {
            #expect(options.variables.contains(name), "ENV \(name) is not a flagsd variable (flagsd --help)")
        }
        #expect(environment["SWITCHYARD_HOST"] == "0.0.0.0", "in a container flagsd must listen beyond loopback")
        let port = try #require(environment["SWITCHYARD_PORT"])
        #expect(
            runtime.contains { $0.keyword == "EXPOSE" && $0.arguments.split(separator: " ").contains(Substring(port)) })
        let flags = try #require(environment["SWITCHYARD_FLAGS"])
        #expect(
            copies.contains { $0.hasPrefix("Flags") && $0.hasSuffix(" " + flags + "/") },
            "Flags/ is copied to SWITCHYARD_FLAGS")
        let database = try #require(environment["SWITCHYARD_DATABASE"])
        let volume = try #require(runtime.last { $0.keyword == "VOLUME" }?.arguments)
        #expect(
            volume.contains(URL(fileURLWithPath: database).deletingLastPathComponent().path),
            "the database lives on the volume")
        #expect(runtime.contains { $0.keyword == "STOPSIGNAL" && $0.arguments == "SIGTERM" })
    }

    /// The image's flagsd links the Swift runtime and Foundation in (`--static-swift-stdlib`), but what they need of
    /// the system stays dynamic: FoundationNetworking needs libcurl, GRDB libsqlite3, the gzip code zlib. Those
    /// libraries are read from the binaries the toolchain built here (the `NEEDED` entries of flagsd and of every
    /// Swift library it loads, not a copied list), each mapped to its Debian package (`dpkg -S`; this machine runs
    /// the runtime image's Debian), and the runtime stage must install every package the slim image lacks: all but
    /// libc6 and what libc6 itself depends on. A missing one would leave the image unable to start flagsd.
    @Test func theRuntimeStageInstallsEveryLibraryTheStaticallyLinkedFlagsdNeeds() async throws {
        let ldd = try requireProgram("ldd", package: "libc-bin")
        let readelf = try requireProgram("readelf", package: "binutils")
        let dpkg = try requireProgram("dpkg", package: "dpkg")
        let dpkgQuery = try requireProgram("dpkg-query", package: "dpkg")
        let flagsd = try Built.binary("flagsd").path

        // soname → path of everything flagsd loads; the Swift libraries are the toolchain's.
        let loaded = try await runProgram(ldd, [flagsd])
        try #require(loaded.status == 0, "ldd \(flagsd): \(loaded.error)")
        var paths: [String: String] = [:]
        for line in loaded.output.split(separator: "\n") {
            let parts = line.split(whereSeparator: \.isWhitespace).map(String.init)
            if parts.count >= 3, parts[1] == "=>" { paths[parts[0]] = parts[2] }
        }
        let toolchain = try #require(
            paths["libswiftCore.so"].map { URL(fileURLWithPath: $0).deletingLastPathComponent().path },
            "flagsd does not load libswiftCore.so: \(loaded.output)")
        let swiftLibraries = paths.filter { $0.value.hasPrefix(toolchain + "/") }
        try #require(swiftLibraries.keys.contains("libFoundationNetworking.so"), "\(swiftLibraries.keys.sorted())")

        // What the binary and the Swift libraries linked into it need of the system.
        var needed: Set<String> = []
        for binary in [flagsd] + swiftLibraries.values.sorted() {
            let dynamic = try await runProgram(readelf, ["-d", binary])
            try #require(dynamic.status == 0, "readelf -d \(binary): \(dynamic.error)")
            for soname in matches(#"\(NEEDED\)\s+Shared library: \[([^\]]+)\]"#, in: dynamic.output, group: 1)
            where swiftLibraries[soname] == nil {
                needed.insert(soname)
            }
        }
        #expect(needed.contains("libcurl.so.4") && needed.contains("libsqlite3.so.0"), "\(needed.sorted())")

        var packages: [String: String] = [:]
        for soname in needed.sorted() {
            // A pattern: the file's path is /usr/lib/… or /lib/… depending on the package.
            let owner = try await runProgram(dpkg, ["-S", "*/" + soname])
            let name = owner.output.split(separator: "\n").first.flatMap { $0.split(separator: ":").first }
            let package = try #require(name.map(String.init), "dpkg -S */\(soname): \(owner.error)")
            packages[soname] = package
        }
        let libcDepends = try await runProgram(dpkgQuery, ["-W", "-f", "${Depends}", "libc6"])
        let inSlimImage = Set(["libc6"] + matches(#"[a-z0-9][a-z0-9.+-]+"#, in: libcDepends.output))

        let instructions = try Self.dockerfile()
        let lastStage = try #require(instructions.last?.stage)
        let runtimeRuns = instructions.filter { $0.stage == lastStage && $0.keyword == "RUN" }.map(\.arguments)
        let installed = Set(
            runtimeRuns.flatMap { run in
                matches(#"apt-get install ([^&]+)"#, in: run, group: 1).flatMap { $0.split(separator: " ") }
            }.map(String.init).filter { !$0.hasPrefix("-") })
        for (soname, package) in packages.sorted(by: { $0.key < $1.key }) where !inSlimImage.contains(package) {
            #expect(
                installed.contains(package),
                "flagsd needs \(soname) (Debian package \(package)); the runtime stage installs only \(installed.sorted())"
            )
        }
    }

    @Test func theBuildContextLeavesOutBuildFoldersAndGit() throws {
        let ignored = try Repository.text(".dockerignore").split(separator: "\n").map(String.init)
        for entry in [".build/", ".git/", ".switchyard/"] {
            #expect(ignored.contains(entry), ".dockerignore lacks \(entry)")
        }
    }

    // MARK: docker-compose

    /// A service with `<<: *anchor` merged in.
    static func merged(_ service: [String: Any]) -> [String: Any] {
        guard let base = service["<<"] as? [String: Any] else { return service }
        return base.merging(service.filter { $0.key != "<<" }) { _, own in own }
    }

    static func environment(_ service: [String: Any]) -> [String: String] {
        if let mapping = service["environment"] as? [String: Any] {
            return mapping.mapValues { "\($0)" }
        }
        return Dictionary(
            ((service["environment"] as? [String]) ?? []).map { entry in
                let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
                return (parts[0], parts.count > 1 ? parts[1] : "")
            }
        ) { _, new in new }
    }

    /// The container side of `HOST:PORT:CONTAINER`, `PORT:CONTAINER` or `CONTAINER`.
    /// Runs flagsd on a PostgreSQL URL whose host and port are replaced by a closed loopback port (1): the URL must
    /// pass flagsd's validation (exit status 64 and a `--database` message otherwise) and flagsd must report the
    /// database unreachable.
    static func expectFlagsdConnects(to url: String, service: String) async throws {
        let closedPort = 1  // tcpmux: nothing listens there on loopback
        let loopback = url.replacingOccurrences(
            of: #"@[^/@]+/"#, with: "@127.0.0.1:\(closedPort)/", options: .regularExpression)
        #expect(loopback != url, "\(service): no @HOST:PORT/ in \(url)")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("deploy-pg-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let outcome = try await runProgram(
            try Built.binary("flagsd").path,
            ["--database", loopback, "--database-wait", "0", "--port", "0", "--log-format", "text"],
            in: folder, deadline: .seconds(60))
        #expect(
            outcome.status != 0 && outcome.status != 64,
            "\(service): flagsd exited with \(outcome.status): \(outcome.error)")
        #expect(!outcome.error.contains("Error: --database"), "\(service): flagsd refused the URL: \(outcome.error)")
        #expect(
            outcome.error.contains("127.0.0.1:\(closedPort)"),
            "\(service): flagsd did not try the database: \(outcome.error)")
    }

    static func containerPort(_ mapping: String) -> String {
        String(mapping.split(separator: ":").last ?? "").split(separator: "/").first.map(String.init) ?? ""
    }

    /// Seconds of `45s`, `1m30s`, `45`.
    static func seconds(_ text: String) -> Int {
        var total = 0
        var number = 0
        for character in text {
            if let digit = character.wholeNumberValue {
                number = number * 10 + digit
            } else {
                total += number * (character == "m" ? 60 : character == "h" ? 3600 : 1)
                number = 0
            }
        }
        return total + number
    }

    @Test func composeRunsFlagsdOnPostgreSQLWithPrometheusAndGrafanaProvisionedFromDashboards() async throws {
        let options = try await FlagsdOptions.read()
        let compose = try Self.yaml("deploy/docker-compose.yml")
        let services = try #require(compose["services"] as? [String: [String: Any]]).mapValues(Self.merged)
        let flagsds = services.filter { ($0.value["image"] as? String)?.contains("flagsd") == true }
        #expect(flagsds.count >= 2, "several flagsd instances, so version drift has something to compare")
        let postgres = try #require(services["postgres"])
        let postgresEnvironment = Self.environment(postgres)

        for (name, service) in flagsds {
            let environment = Self.environment(service)
            for variable in environment.keys {
                #expect(
                    options.variables.contains(variable),
                    "\(name): \(variable) is not a flagsd variable (flagsd --help)")
            }
            #expect(environment["SWITCHYARD_HOST"] == "0.0.0.0", "\(name) must listen beyond loopback in its container")
            let port = try #require(environment["SWITCHYARD_PORT"], "\(name) names its port")
            for mapping in (service["ports"] as? [String]) ?? [] {
                #expect(
                    Self.containerPort(mapping) == port, "\(name) publishes \(mapping) but flagsd listens on \(port)")
            }
            #expect(
                Self.seconds(service["stop_grace_period"] as? String ?? "10s") > Int(
                    environment["SWITCHYARD_MAX_WAIT"] ?? "30")!,
                "\(name) must get longer to stop than a long-poll's wait")
            let build = try #require(service["build"] as? [String: Any])
            let context = URL(fileURLWithPath: Repository.url("deploy").path).appendingPathComponent(
                build["context"] as? String ?? "."
            ).standardized
            #expect(
                FileManager.default.fileExists(
                    atPath: context.appendingPathComponent(build["dockerfile"] as? String ?? "Dockerfile").path))
            // On PostgreSQL, with the database, user and password the postgres service creates.
            let database = try #require(environment["SWITCHYARD_DATABASE"])
            #expect(database.hasPrefix("postgres://"), "\(name) runs on PostgreSQL")
            #expect(
                database.contains("\(postgresEnvironment["POSTGRES_USER"] ?? "?"):"), "\(name) logs in as POSTGRES_USER"
            )
            #expect(
                database.contains("@postgres:5432/\(postgresEnvironment["POSTGRES_DB"] ?? "?")"),
                "\(name) uses POSTGRES_DB on the postgres service")
            // The postgres image has no TLS: without sslmode, flagsd would insist on verify-full for its host.
            #expect(
                URLComponents(
                    string: database.replacingOccurrences(of: "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}", with: "p"))?
                    .queryItems?.first { $0.name == "sslmode" }?.value == "disable",
                "\(name) states sslmode for a database without TLS")
            #expect((service["depends_on"] as? [String: Any])?["postgres"] != nil)
        }
        // flagsd takes the PostgreSQL URL the services are given: it passes validation and flagsd goes on to
        // connect (to a closed loopback port here, in place of the postgres service, with no wait).
        #expect(
            options.helpOf("--database").lowercased().contains("postgres://"),
            "flagsd --database takes no PostgreSQL URL: \(options.helpOf("--database"))")
        for (name, service) in flagsds {
            let database = try #require(Self.environment(service)["SWITCHYARD_DATABASE"])
                .replacingOccurrences(of: "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}", with: "compose-password")
            try await Self.expectFlagsdConnects(to: database, service: name)
        }

        // Prometheus scrapes every flagsd at its port and path, as job flagsd, and loads the alert rules.
        let prometheus = try #require(services["prometheus"])
        let prometheusVolumes = (prometheus["volumes"] as? [String]) ?? []
        let configMount = try #require(prometheusVolumes.first { $0.hasSuffix(":/etc/prometheus/prometheus.yml:ro") })
        let configFile = String(configMount.split(separator: ":")[0])
        let config = try Self.yaml("deploy/" + configFile)
        let job = try #require(
            (config["scrape_configs"] as? [[String: Any]])?.first { $0["job_name"] as? String == "flagsd" },
            "a scrape job named flagsd (the alert rules name it)")
        let targets = Set(
            ((job["static_configs"] as? [[String: Any]]) ?? []).flatMap { ($0["targets"] as? [String]) ?? [] })
        let expected = Set(flagsds.map { "\($0.key):\(Self.environment($0.value)["SWITCHYARD_PORT"] ?? "")" })
        #expect(targets == expected)
        let metricsPath = job["metrics_path"] as? String ?? "/metrics"
        let rulesMount = try #require(prometheusVolumes.first { $0.contains("Dashboards/alerts.yml") })
        let rulesTarget = String(rulesMount.split(separator: ":")[1])
        let ruleGlobs = (config["rule_files"] as? [String]) ?? []
        #expect(
            ruleGlobs.contains { glob in
                let folder = URL(fileURLWithPath: glob).deletingLastPathComponent().path
                return rulesTarget.hasPrefix(folder + "/") && rulesTarget.hasSuffix(".yml")
            }, "rule_files \(ruleGlobs) does not load \(rulesTarget)")

        // Grafana: the provisioning files name Prometheus's service and the folder Dashboards/ is mounted at.
        let grafana = try #require(services["grafana"])
        let grafanaVolumes = (grafana["volumes"] as? [String]) ?? []
        let dashboardsMount = try #require(grafanaVolumes.first { $0.hasPrefix("../Dashboards:") })
        let dashboardsTarget = String(dashboardsMount.split(separator: ":")[1])
        let provisioning = try #require(grafanaVolumes.first { $0.hasSuffix(":/etc/grafana/provisioning:ro") })
        let provisioningFolder =
            "deploy/" + String(provisioning.split(separator: ":")[0]).replacingOccurrences(of: "./", with: "")
        let providers =
            try Self.yaml(provisioningFolder + "/dashboards/switchyard.yml")["providers"] as? [[String: Any]] ?? []
        #expect(providers.contains { ($0["options"] as? [String: Any])?["path"] as? String == dashboardsTarget })
        let sources =
            try Self.yaml(provisioningFolder + "/datasources/prometheus.yml")["datasources"] as? [[String: Any]] ?? []
        let prometheusPort = String((prometheus["ports"] as? [String])?.first.map(Self.containerPort) ?? "9090")
        #expect(
            sources.contains {
                $0["type"] as? String == "prometheus" && $0["url"] as? String == "http://prometheus:\(prometheusPort)"
            })
        let home = Self.environment(grafana)["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"] ?? ""
        #expect(
            home.hasPrefix(dashboardsTarget + "/")
                && Repository.exists("Dashboards/" + URL(fileURLWithPath: home).lastPathComponent))

        // Prometheus sends a bearer token from a compose secret that holds the variable every flagsd creates its
        // metrics token from; the path it scrapes answers with that token, and refuses without one.
        let authorization = try #require(
            job["authorization"] as? [String: Any], "the flagsd job sends a token (/metrics needs one)")
        let credentials = try #require(authorization["credentials_file"] as? String)
        let secretName = URL(fileURLWithPath: credentials).lastPathComponent
        #expect(credentials == "/run/secrets/\(secretName)")
        #expect(
            ((prometheus["secrets"] as? [Any]) ?? []).contains { "\($0)" == secretName },
            "prometheus is given the secret \(secretName)")
        let secret = try #require((compose["secrets"] as? [String: [String: Any]])?[secretName])
        let variable = try #require(secret["environment"] as? String)
        #expect(variable == "SWITCHYARD_METRICS_TOKEN")
        for (name, service) in flagsds {
            #expect(
                Self.environment(service)[variable]?.hasPrefix("${\(variable):?") == true,
                "\(name) creates the token Prometheus sends")
        }
        let metricsToken = "compose-metrics-token-0123456789"
        let flagsd = try await LiveFlagsd.start(environment: [variable: metricsToken])
        defer { flagsd.stop() }
        #expect(try await flagsd.send("GET", metricsPath, token: metricsToken).status == 200)
        #expect(try await flagsd.send("GET", metricsPath, token: nil).status == 401)
    }

    // MARK: Kubernetes

    static func kubernetes() throws -> [String: [String: Any]] {
        var documents: [String: [String: Any]] = [:]
        let kustomization = try Self.yaml("deploy/kubernetes/kustomization.yaml")
        for file in (kustomization["resources"] as? [String]) ?? [] {
            let document = try Self.yaml("deploy/kubernetes/" + file)
            documents[document["kind"] as? String ?? file] = document
        }
        return documents
    }

    @Test func theKubernetesManifestsProbeAndConfigureFlagsdAsItReallyIs() async throws {
        let options = try await FlagsdOptions.read()
        let files = try FileManager.default.contentsOfDirectory(atPath: Repository.url("deploy/kubernetes").path).filter
        { $0.hasSuffix(".yaml") }
        let listed = Set((try Self.yaml("deploy/kubernetes/kustomization.yaml")["resources"] as? [String]) ?? [])
        #expect(Set(files).subtracting(["kustomization.yaml"]) == listed, "kustomization.yaml lists every manifest")
        let manifests = try Self.kubernetes()
        for kind in ["Deployment", "Service", "PodDisruptionBudget", "ConfigMap", "Secret"] {
            #expect(manifests[kind] != nil, "no \(kind)")
        }
        let deployment = try #require(manifests["Deployment"])
        let configMap = try #require(manifests["ConfigMap"])
        let secret = try #require(manifests["Secret"])
        let config = (configMap["data"] as? [String: Any] ?? [:]).mapValues { "\($0)" }
        let secrets = (secret["stringData"] as? [String: Any] ?? secret["data"] as? [String: Any] ?? [:])
        for variable in Set(config.keys).union(secrets.keys) {
            #expect(options.variables.contains(variable), "\(variable) is not a flagsd variable (flagsd --help)")
        }
        #expect(
            secrets["SWITCHYARD_DATABASE"] != nil && secrets["SWITCHYARD_ADMIN_TOKEN"] != nil,
            "the database URL and the admin token are secrets")
        #expect(
            config["SWITCHYARD_HOST"] == "0.0.0.0", "flagsd must listen on the pod's address for probes and the Service"
        )

        let spec = try #require(deployment["spec"] as? [String: Any])
        let template = try #require(spec["template"] as? [String: Any])
        let podLabels = ((template["metadata"] as? [String: Any])?["labels"] as? [String: String]) ?? [:]
        let podSpec = try #require(template["spec"] as? [String: Any])
        let container = try #require(
            (podSpec["containers"] as? [[String: Any]])?.first { $0["name"] as? String == "flagsd" })
        let ports = (container["ports"] as? [[String: Any]]) ?? []
        let http = try #require(ports.first { $0["name"] as? String == "http" })
        #expect("\(http["containerPort"] ?? "")" == config["SWITCHYARD_PORT"], "containerPort is SWITCHYARD_PORT")
        let selector = ((spec["selector"] as? [String: Any])?["matchLabels"] as? [String: String]) ?? [:]
        #expect(!selector.isEmpty && selector.allSatisfy { podLabels[$0.key] == $0.value })

        // Configuration from the ConfigMap and the Secret, by name.
        let sources = (container["envFrom"] as? [[String: Any]]) ?? []
        let configName = (configMap["metadata"] as? [String: Any])?["name"] as? String
        let secretName = (secret["metadata"] as? [String: Any])?["name"] as? String
        #expect(sources.contains { ($0["configMapRef"] as? [String: Any])?["name"] as? String == configName })
        #expect(sources.contains { ($0["secretRef"] as? [String: Any])?["name"] as? String == secretName })

        // Probes: readiness on /readyz, liveness on /healthz, on the http port; both answer 200 on a live flagsd.
        var probePaths: [String: String] = [:]
        for probe in ["readinessProbe", "livenessProbe", "startupProbe"] {
            guard let get = (container[probe] as? [String: Any])?["httpGet"] as? [String: Any] else { continue }
            let port = "\(get["port"] ?? "")"
            #expect(port == "http" || port == config["SWITCHYARD_PORT"], "\(probe) probes port \(port)")
            probePaths[probe] = get["path"] as? String
        }
        #expect(probePaths["readinessProbe"] == "/readyz", "readiness must follow the database (/readyz)")
        #expect(
            probePaths["livenessProbe"] == "/healthz",
            "liveness must not restart pods when the database is down (/healthz)")
        let annotations = ((template["metadata"] as? [String: Any])?["annotations"] as? [String: String]) ?? [:]
        #expect(annotations["prometheus.io/port"] == config["SWITCHYARD_PORT"])
        // The probes answer without a token; /metrics with the metrics token the Secret gives flagsd.
        #expect(secrets["SWITCHYARD_METRICS_TOKEN"] != nil, "the Secret holds the scraper's token")
        let metricsToken = "kubernetes-metrics-token-0123456789"
        let flagsd = try await LiveFlagsd.start(environment: ["SWITCHYARD_METRICS_TOKEN": metricsToken])
        defer { flagsd.stop() }
        for path in Set(probePaths.values) {
            let response = try await flagsd.send("GET", path, token: nil)
            #expect(response.status == 200, "\(path) answers \(response.status) without a token: \(response.body)")
        }
        let metricsPath = annotations["prometheus.io/path"] ?? "/metrics"
        #expect(try await flagsd.send("GET", metricsPath, token: metricsToken).status == 200)

        // Shutdown: longer than a long-poll wait plus the preStop pause.
        let grace = podSpec["terminationGracePeriodSeconds"] as? Int ?? 30
        let preStop =
            ((((container["lifecycle"] as? [String: Any])?["preStop"] as? [String: Any])?["exec"] as? [String: Any])?[
                "command"] as? [String])?.last.flatMap(Int.init) ?? 0
        #expect(grace > Int(config["SWITCHYARD_MAX_WAIT"] ?? "30")! + preStop)

        // Non-root, the same user as the image, read-only root filesystem, no privileges.
        let podSecurity = (podSpec["securityContext"] as? [String: Any]) ?? [:]
        let containerSecurity = (container["securityContext"] as? [String: Any]) ?? [:]
        #expect(podSecurity["runAsNonRoot"] as? Bool == true)
        let imageUser = try Self.dockerfile().last { $0.keyword == "USER" }?.arguments.split(separator: ":").first.map(
            String.init)
        #expect("\(podSecurity["runAsUser"] ?? "")" == imageUser, "runAsUser is the image's USER")
        #expect(containerSecurity["readOnlyRootFilesystem"] as? Bool == true)
        #expect(containerSecurity["allowPrivilegeEscalation"] as? Bool == false)
        #expect(((containerSecurity["capabilities"] as? [String: Any])?["drop"] as? [String]) == ["ALL"])

        // The Service and the budget select the pods; the Service reaches the http port.
        let service = try #require(manifests["Service"])
        let serviceSpec = try #require(service["spec"] as? [String: Any])
        let serviceSelector = (serviceSpec["selector"] as? [String: String]) ?? [:]
        #expect(!serviceSelector.isEmpty && serviceSelector.allSatisfy { podLabels[$0.key] == $0.value })
        let targetPorts = ((serviceSpec["ports"] as? [[String: Any]]) ?? []).map { "\($0["targetPort"] ?? "")" }
        #expect(!targetPorts.isEmpty && targetPorts.allSatisfy { $0 == "http" || $0 == config["SWITCHYARD_PORT"] })
        let budget = try #require(manifests["PodDisruptionBudget"])
        let budgetSpec = try #require(budget["spec"] as? [String: Any])
        let budgetSelector = ((budgetSpec["selector"] as? [String: Any])?["matchLabels"] as? [String: String]) ?? [:]
        #expect(!budgetSelector.isEmpty && budgetSelector.allSatisfy { podLabels[$0.key] == $0.value })
        let replicas = spec["replicas"] as? Int ?? 1
        let maxUnavailable = budgetSpec["maxUnavailable"] as? Int ?? 0
        #expect(replicas >= 2 && maxUnavailable >= 1 && maxUnavailable < replicas, "drains keep some pods serving")
    }

    // MARK: systemd

    @Test func theSystemdUnitVerifiesIsHardenedAndNamesFlagsdsVariables() async throws {
        let options = try await FlagsdOptions.read()
        let analyze = try requireProgram("systemd-analyze", package: "systemd")
        let unit = try Repository.text("deploy/systemd/flagsd.service")
        let directives = unit.split(separator: "\n").filter { !$0.hasPrefix("#") && $0.contains("=") }.map {
            line -> (String, String) in
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            return (parts[0], parts.count > 1 ? parts[1] : "")
        }
        func value(_ key: String) -> String? { directives.last { $0.0 == key }?.1 }

        let environment = Dictionary(directives.filter { $0.0 == "Environment" }.flatMap { Self.assignments($0.1) }) {
            _, new in new
        }
        for name in environment.keys {
            #expect(options.variables.contains(name), "Environment=\(name) is not a flagsd variable (flagsd --help)")
        }
        let example = try Repository.text("deploy/systemd/flagsd.env.example")
        for name in Set(matches(#"(?m)^#?([A-Z][A-Z0-9_]*)="#, in: example, group: 1)) {
            #expect(
                options.variables.contains(name), "flagsd.env.example names \(name), which is not a flagsd variable")
        }
        let execStart = try #require(value("ExecStart"))
        #expect(
            URL(fileURLWithPath: execStart.split(separator: " ").first.map(String.init) ?? "").lastPathComponent
                == "flagsd")
        #expect(Self.seconds(value("TimeoutStopSec") ?? "90") > Int(environment["SWITCHYARD_MAX_WAIT"] ?? "30")!)
        let state = try #require(value("StateDirectory"))
        #expect(
            environment["SWITCHYARD_DATABASE"]?.hasPrefix("/var/lib/\(state)/") == true,
            "the database lives in the state directory")

        // systemd-analyze verify, with ExecStart pointing at the built binary (verify checks that it exists).
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "deploy-tests-unit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let copy = folder.appendingPathComponent("flagsd.service")
        let built = try Built.binary("flagsd").path
        try unit.replacingOccurrences(of: "ExecStart=\(execStart)", with: "ExecStart=\(built)")
            .write(to: copy, atomically: true, encoding: .utf8)
        let verify = try await runProgram(analyze, ["verify", copy.path])
        #expect(verify.status == 0, "systemd-analyze verify:\n\(verify.output)\(verify.error)")
        // verify reports unknown keys and bad values as warnings, still exiting 0: there must be none.
        let warnings = (verify.output + verify.error).split(separator: "\n").filter { $0.contains("flagsd.service") }
        #expect(warnings.isEmpty, "systemd-analyze verify:\n\(warnings.joined(separator: "\n"))")

        // systemd's own exposure score for the sandboxing: "OK" (below 2.0 of 10).
        let security = try await runProgram(analyze, ["security", "--offline=true", "--no-pager", copy.path])
        let overall =
            security.output.split(separator: "\n").last { $0.contains("Overall exposure level") }.map(String.init) ?? ""
        let score = Double(matches(#"level for \S+: ([0-9.]+)"#, in: overall, group: 1).first ?? "") ?? 10
        #expect(
            score < 2.0, "systemd-analyze security: \(overall.isEmpty ? security.output + security.error : overall)")
    }
}
