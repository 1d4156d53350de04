/// The release of allspark-recorder (`--version`, the console, the package).
public enum ProductVersion {
    public static let current = "0.7.0"
}
