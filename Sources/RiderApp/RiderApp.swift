// Sample rider app: issue 5.
