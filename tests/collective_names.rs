//! The names of reduce ops and algorithms: `Display` and `FromStr` round-trip, nccl-tests' short
//! names, and unknown names are typed errors.

use collectives::{Algorithm, Error, ReduceOp};

#[test]
fn reduce_ops_round_trip_through_their_names() {
    for op in [
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Avg,
        ReduceOp::PreMulSum(0.25),
        ReduceOp::PreMulSum(-3.0),
    ] {
        assert_eq!(op.to_string().parse::<ReduceOp>().unwrap(), op, "{op}");
    }
    assert_eq!(" PreMulSum:0.5 ".parse::<ReduceOp>().unwrap(), ReduceOp::PreMulSum(0.5));
    assert_eq!("premulsum".parse::<ReduceOp>().unwrap(), ReduceOp::PreMulSum(2.0));
    let names: Vec<&str> = [
        ReduceOp::Sum,
        ReduceOp::Prod,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Avg,
        ReduceOp::PreMulSum(7.0),
    ]
    .iter()
    .map(|o| o.name())
    .collect();
    assert_eq!(names, ["sum", "prod", "max", "min", "avg", "premulsum"]);
}

#[test]
fn algorithms_round_trip_through_their_names() {
    for a in [Algorithm::Auto, Algorithm::Star, Algorithm::Ring, Algorithm::Nccl] {
        assert_eq!(a.to_string().parse::<Algorithm>().unwrap(), a, "{a}");
    }
    assert_eq!(" RING ".parse::<Algorithm>().unwrap(), Algorithm::Ring);
}

#[test]
fn unknown_names_are_typed_errors() {
    for s in ["", "sums", "premulsum:x", "premulsum()", "premulsum(2", "max:2", "mean"] {
        let e = s.parse::<ReduceOp>().unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { what: "reduce op", .. }), "{s:?}: {e:?}");
    }
    for s in ["", "tree", "star ring"] {
        let e = s.parse::<Algorithm>().unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { what: "algorithm", .. }), "{s:?}: {e:?}");
    }
}
