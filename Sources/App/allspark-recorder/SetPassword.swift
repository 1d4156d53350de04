import ArgumentParser
import Console
import Foundation
import RecorderCore

struct SetPassword: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-password",
        abstract: "Set the web console's password (user admin), read from standard input.",
        discussion: """
            Stores a salted PBKDF2 hash in the storage folder of --config (never the \
            password):
              echo 'a long passphrase' | allspark-recorder set-password \\
                --config /etc/allspark-recorder/recorder.toml

            Without it the service makes a password at its first start and logs it \
            once. Sessions already logged in stay until they expire or the service \
            restarts.
            """)

    @Option(help: "The config file (its recording.storage_dir keeps the password hash).")
    var config: String

    @OptionGroup var common: CommonOptions

    func run() throws {
        common.bootstrapLogging()
        let configuration: RecorderConfig
        do { configuration = try ConfigLoader.load(file: config, overrides: common.overrides) } catch { fail("\(error)") }
        guard let line = readLine(strippingNewline: true), !line.isEmpty else {
            fail("no password on standard input (e.g. echo 'a long passphrase' | allspark-recorder set-password --config \(config))")
        }
        let store = ConsolePassword(storageDirectory: configuration.recording.storageDirectory)
        do { try store.set(line) } catch { fail("\(error)") }
        FileHandle.standardError.write(Data("The console password for \(ConsolePassword.user) is set (\(store.path)).\n".utf8))
    }
}
